//! A peer of `cargo xtask peer-cost`: rig (rig-core and rig-agent 0.44) running the
//! scenario of Oxydra's `run_process` bench — an agent with one `file_read` tool,
//! driven by a streamed OpenAI-format model until it answers.
//!
//! Usage: `peer-rig BASE_URL WORKSPACE PROMPT`. The model is the local mock server at
//! `BASE_URL` (an OpenAI base URL ending in `/v1`); `file_read` (the peers' shared
//! tool, `bench/peer-file-read`) reads below `WORKSPACE`. rig runs the calls of a turn
//! one after the other (its default `tool_concurrency`) and keeps nothing on disk. The
//! final answer is printed; any error ends the process with status 1.

use std::path::PathBuf;

use futures::StreamExt;
use peer_file_read::ReadArgs;
use rig_agent::agent::MultiTurnStreamItem;
use rig_agent::prelude::*;
use rig_agent::tool::ToolContext;
use rig_core::providers::openai::OpenAIConfig;

/// The model budget: the scenario takes 21 calls.
const MAX_TURNS: usize = 25;

/// Why `file_read` failed.
#[derive(Debug)]
struct ReadError(String);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadError {}

/// The peers' shared `file_read` (`bench/peer-file-read`) as a rig tool.
#[derive(Clone)]
struct FileRead {
    workspace: PathBuf,
}

impl Tool for FileRead {
    const NAME: &'static str = peer_file_read::NAME;
    type Args = ReadArgs;
    type Output = String;
    type Error = ReadError;

    fn description(&self) -> String {
        peer_file_read::DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> serde_json::Value {
        peer_file_read::parameters()
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: Self::Args,
    ) -> Result<Self::Output, Self::Error> {
        peer_file_read::read(&self.workspace, &args)
            .await
            .map_err(ReadError)
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, workspace, prompt] = args.as_slice() else {
        eprintln!("usage: peer-rig BASE_URL WORKSPACE PROMPT");
        return std::process::ExitCode::from(2);
    };
    let model = OpenAIConfig::new("peer-bench")
        .with_base_url(base_url.as_str())
        .client()
        .chat("gpt-4o-mini");
    let agent = AgentBuilder::new(model)
        .preamble("You are a careful assistant. Use file_read to read files.")
        .tool(FileRead {
            workspace: PathBuf::from(workspace),
        })
        .build();
    let mut stream = agent.prompt(prompt.as_str()).max_turns(MAX_TURNS).stream();
    while let Some(item) = stream.next().await {
        match item {
            Ok(MultiTurnStreamItem::FinalResponse(response)) => {
                println!("{}", response.output());
                return std::process::ExitCode::SUCCESS;
            }
            Ok(_) => {}
            Err(error) => {
                eprintln!("peer-rig: {error}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    eprintln!("peer-rig: the stream ended without a final response");
    std::process::ExitCode::FAILURE
}
