//! A custom `PermissionBroker`: privileged tools ask it before every call. This one
//! approves commands from an allow-list and refuses the rest; the model is told of a
//! refusal and can try something else.
//!
//! `OPENAI_API_KEY=… cargo run --example permission_broker`

use std::sync::Arc;

use oxydra::executor::{PermissionBroker, PermissionDecision, PermissionRequest};
use oxydra::runtime::AgentRuntime;
use oxydra::{async_trait, tool};

/// Runs a (pretend) shell command.
#[tool(privileged)]
async fn run_command(
    /// The command line.
    command: String,
) -> Result<String, std::fmt::Error> {
    Ok(format!("ran `{command}`"))
}

/// Approves `run_command` calls whose command starts with an allowed program.
struct AllowList(&'static [&'static str]);

#[async_trait]
impl PermissionBroker for AllowList {
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        let command = request.arguments.get("command");
        let command = command.and_then(|c| c.as_str()).unwrap_or_default();
        let program = command.split_whitespace().next().unwrap_or_default();
        if self.0.contains(&program) {
            eprintln!("approved: {command}");
            PermissionDecision::ApproveOnce
        } else {
            eprintln!("denied: {command}");
            PermissionDecision::Deny
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .tool(RunCommand)
        .permission_broker(Arc::new(AllowList(&["ls", "cat"])))
        .build()?;
    let outcome = agent
        .run("Clean up the temp files, then list them.")
        .await?;
    println!("{}", outcome.final_text);
    Ok(())
}
