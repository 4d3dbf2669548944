//! A peer of `cargo xtask peer-cost`: ADK-Rust 2.3 (the `adk-rust` crate with its
//! `agents`, `models`, `runner`, `sessions` and `openai` features) running the scenario
//! of Oxydra's `run_process` bench — an `LlmAgent` with one `file_read` tool in a
//! `Runner`, driven by an OpenAI-compatible model until it answers.
//!
//! Usage: `peer-adk BASE_URL WORKSPACE PROMPT`. The model is the local mock server at
//! `BASE_URL` (an OpenAI base URL ending in `/v1`), reached by
//! `OpenAIClient::compatible` (Chat Completions); `file_read` (the peers' shared tool,
//! `bench/peer-file-read`) reads below `WORKSPACE`.
//!
//! What ADK-Rust does by default and this peer keeps: every model call is streamed
//! (`LlmAgent` always asks its model for a stream; the run config's default
//! `StreamingMode::SSE` passes each chunk on as an event), the calls of a turn run one
//! after the other (`ToolExecutionStrategy::Sequential`), the session lives in an
//! `InMemorySessionService` (nothing on disk), and the agent's iteration budget (100)
//! is above the scenario's 21 calls. The final answer is printed; any error ends the
//! process with status 1.

use std::path::PathBuf;
use std::sync::Arc;

use adk_rust::agent::LlmAgentBuilder;
use adk_rust::model::OpenAIClient;
use adk_rust::runner::Runner;
use adk_rust::session::{CreateRequest, InMemorySessionService, SessionService};
use adk_rust::{AdkError, Agent, Content, Part, SessionId, Tool, ToolContext, UserId, async_trait};
use futures::StreamExt;
use peer_file_read::ReadArgs;
use serde_json::Value;

const APP: &str = "peer-adk";
const USER: &str = "bench";
const SESSION: &str = "scenario";

/// The system prompt.
const PREAMBLE: &str = "You are a careful assistant. Use file_read to read files.";

/// The peers' shared `file_read` as an ADK tool.
struct FileRead {
    workspace: PathBuf,
}

#[async_trait]
impl Tool for FileRead {
    fn name(&self) -> &str {
        peer_file_read::NAME
    }

    fn description(&self) -> &str {
        peer_file_read::DESCRIPTION
    }

    fn parameters_schema(&self) -> Option<Value> {
        Some(peer_file_read::parameters())
    }

    async fn execute(&self, _ctx: Arc<dyn ToolContext>, args: Value) -> adk_rust::Result<Value> {
        let args: ReadArgs = serde_json::from_value(args)
            .map_err(|e| AdkError::tool(format!("file_read arguments: {e}")))?;
        peer_file_read::read(&self.workspace, &args)
            .await
            .map(Value::String)
            .map_err(AdkError::tool)
    }
}

/// The text parts of an event's content, joined.
fn text_of(content: &Content) -> String {
    content
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Runs the agent on `prompt`; the error is the framework's, as text.
async fn run(base_url: &str, workspace: &str, prompt: &str) -> Result<String, String> {
    let model = OpenAIClient::compatible("peer-bench", base_url, "gpt-4o-mini")
        .map_err(|e| e.to_string())?;
    let agent = LlmAgentBuilder::new("reader")
        .model(Arc::new(model))
        .instruction(PREAMBLE)
        .tool(Arc::new(FileRead {
            workspace: PathBuf::from(workspace),
        }))
        .build()
        .map_err(|e| e.to_string())?;
    let sessions: Arc<dyn SessionService> = Arc::new(InMemorySessionService::new());
    sessions
        .create(CreateRequest {
            app_name: APP.to_owned(),
            user_id: USER.to_owned(),
            session_id: Some(SESSION.to_owned()),
            state: Default::default(),
        })
        .await
        .map_err(|e| e.to_string())?;
    let runner = Runner::builder()
        .app_name(APP)
        .agent(Arc::new(agent) as Arc<dyn Agent>)
        .session_service(sessions)
        .build()
        .map_err(|e| e.to_string())?;
    let mut events = runner
        .run(
            UserId::new(USER).map_err(|e| e.to_string())?,
            SessionId::new(SESSION).map_err(|e| e.to_string())?,
            Content::new("user").with_text(prompt),
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = None;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| e.to_string())?;
        if event.is_final_response() {
            answer = event.content().map(text_of);
        }
    }
    answer.ok_or_else(|| "the run ended without a final response".to_owned())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, workspace, prompt] = args.as_slice() else {
        eprintln!("usage: peer-adk BASE_URL WORKSPACE PROMPT");
        return std::process::ExitCode::from(2);
    };
    match run(base_url, workspace, prompt).await {
        Ok(answer) if !answer.is_empty() => {
            println!("{answer}");
            std::process::ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("peer-adk: the final response had no text");
            std::process::ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("peer-adk: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
