//! A peer of `cargo xtask peer-cost`: AutoAgents 0.4 (the `autoagents` crate with its
//! `openai` feature) running the scenario of Oxydra's `run_process` bench — a ReAct
//! agent with one `file_read` tool, driven by an OpenAI-format model until it answers.
//!
//! Usage: `peer-autoagents BASE_URL WORKSPACE PROMPT`. The model is the local mock
//! server at `BASE_URL` (an OpenAI base URL ending in `/v1`); `file_read` (the peers'
//! shared tool, `bench/peer-file-read`) reads below `WORKSPACE`.
//!
//! What AutoAgents does by default and this peer keeps:
//! - `agent.run(task)` on a direct (non-actor) agent: each model call is a whole
//!   `stream: false` chat completion (`AgentBuilder::stream` is `false` unless set);
//! - the calls of a turn run one after the other (its turn engine awaits each);
//! - the conversation lives in a `SlidingWindowMemory`, in memory only. Without a
//!   memory the ReAct loop sends the model only the system prompt and the task, never
//!   the tool results; the window (100 messages) holds the whole run (2 per turn).
//!
//! What it sets against its defaults: the OpenAI backend's API mode to Chat Completions
//! (its default is the Responses API, `POST /responses`, which the scripted server
//! does not speak) and the turn budget to 25 (its default of 10 ends the 21-call
//! scenario early). The final answer is printed; any error ends the process with
//! status 1.

use std::path::PathBuf;
use std::sync::Arc;

use autoagents::async_trait;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::ReActAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{AgentBuilder, AgentDeriveT, AgentHooks, DirectAgent};
use autoagents::core::tool::{ToolCallError, ToolRuntime, ToolT};
use autoagents::llm::backends::openai::{OpenAI, OpenAIApiMode};
use autoagents::llm::builder::LLMBuilder;
use futures::StreamExt;
use peer_file_read::ReadArgs;
use serde_json::Value;

/// The model budget: the scenario takes 21 calls.
const MAX_TURNS: usize = 25;

/// Messages the memory keeps: the run stores 41 (the task, then an assistant and a
/// tool-result message per turn).
const MEMORY_WINDOW: usize = 100;

/// The system prompt.
const PREAMBLE: &str = "You are a careful assistant. Use file_read to read files.";

/// The peers' shared `file_read` as an AutoAgents tool.
#[derive(Debug)]
struct FileRead {
    workspace: PathBuf,
}

impl ToolT for FileRead {
    fn name(&self) -> &str {
        peer_file_read::NAME
    }

    fn description(&self) -> &str {
        peer_file_read::DESCRIPTION
    }

    fn args_schema(&self) -> Value {
        peer_file_read::parameters()
    }
}

#[async_trait]
impl ToolRuntime for FileRead {
    async fn execute(&self, args: Value) -> Result<Value, ToolCallError> {
        let args: ReadArgs = serde_json::from_value(args)?;
        peer_file_read::read(&self.workspace, &args)
            .await
            .map(Value::String)
            .map_err(|message| ToolCallError::RuntimeError(message.into()))
    }
}

/// The agent: its name, system prompt and one tool; no structured output.
#[derive(Debug)]
struct Reader {
    workspace: PathBuf,
}

impl AgentDeriveT for Reader {
    type Output = String;

    fn description(&self) -> &str {
        PREAMBLE
    }

    fn output_schema(&self) -> Option<Value> {
        None
    }

    fn name(&self) -> &str {
        "reader"
    }

    fn tools(&self) -> Vec<Box<dyn ToolT>> {
        vec![Box::new(FileRead {
            workspace: self.workspace.clone(),
        })]
    }
}

/// No hooks: every one keeps its default.
#[async_trait]
impl AgentHooks for Reader {}

/// Runs the agent on `prompt`; the error is the framework's, as text.
async fn run(base_url: &str, workspace: &str, prompt: &str) -> Result<String, String> {
    let llm: Arc<OpenAI> = LLMBuilder::<OpenAI>::new()
        .api_key("peer-bench")
        .base_url(base_url)
        .model("gpt-4o-mini")
        .api_mode(OpenAIApiMode::ChatCompletions)
        .build()
        .map_err(|e| e.to_string())?;
    let reader = Reader {
        workspace: PathBuf::from(workspace),
    };
    let mut handle =
        AgentBuilder::<_, DirectAgent>::new(ReActAgent::with_max_turns(reader, MAX_TURNS))
            .llm(llm)
            .memory(Box::new(SlidingWindowMemory::new(MEMORY_WINDOW)))
            .build()
            .await
            .map_err(|e| e.to_string())?;
    // The agent reports its progress as events on a bounded channel whose sends wait
    // when it is full: read them, as a program watching the run would.
    let mut events = std::mem::replace(&mut handle.rx, Box::pin(futures::stream::empty()));
    let drain = tokio::spawn(async move { while events.next().await.is_some() {} });
    let answer = handle
        .agent
        .run(Task::new(prompt))
        .await
        .map_err(|e| e.to_string());
    drain.abort();
    answer
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, workspace, prompt] = args.as_slice() else {
        eprintln!("usage: peer-autoagents BASE_URL WORKSPACE PROMPT");
        return std::process::ExitCode::from(2);
    };
    match run(base_url, workspace, prompt).await {
        Ok(answer) if !answer.is_empty() => {
            println!("{answer}");
            std::process::ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("peer-autoagents: the run ended without an answer");
            std::process::ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("peer-autoagents: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
