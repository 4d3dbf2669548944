//! Approvals that wait for a person: the `PermissionBroker` answers `Defer`, so the run
//! stops before the privileged call and lists what waits (`RunOutcome::AwaitingApproval`:
//! an outcome, not an error). The answer is typed (`.output::<T>()`), and the run
//! resumes to it.
//! A person decides — here on stdin, in a real service perhaps hours later and in
//! another process sharing the database — and a request carrying the decisions resumes
//! the run: the approved call runs without asking the model again, a denial reaches the
//! model as the tool's error.
//!
//! `OPENAI_API_KEY=… cargo run --example deferred_approval -- approvals.db`

use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use oxydra::executor::{PermissionBroker, PermissionDecision, PermissionRequest};
use oxydra::memory::{SqliteConfig, SqliteMemory};
use oxydra::runtime::{AgentRuntime, ApprovalDecision, RunOutcome};
use oxydra::schemars::JsonSchema;
use oxydra::serde::Deserialize;
use oxydra::types::SessionId;
use oxydra::{async_trait, tool};

/// Runs a (pretend) shell command.
#[tool(privileged)]
async fn run_command(
    /// The command line.
    command: String,
) -> Result<String, std::fmt::Error> {
    Ok(format!("ran `{command}`"))
}

/// What the model reports when it is done.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(crate = "oxydra::serde")]
#[schemars(crate = "oxydra::schemars")]
struct Report {
    /// Whether the build directory is gone.
    deleted: bool,
    /// What was done, in a sentence.
    summary: String,
}

/// No one is at the terminal while the agent works: every request waits, for a day.
struct AskLater;

#[async_trait]
impl PermissionBroker for AskLater {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Defer(Duration::from_secs(24 * 3600))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "oxydra-approvals.db".into());
    // Opening applies migrations (file I/O): `open_async` does it off the async threads.
    let memory = Arc::new(SqliteMemory::open_async(&path, SqliteConfig::default()).await?);
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .tool(RunCommand)
        .permission_broker(Arc::new(AskLater))
        .memory(memory)
        .build()?;
    let session = SessionId::generate();
    let mut request = agent
        .session(&session)
        .prompt("Delete the build directory with a shell command, then report what you did.");
    loop {
        match request.output::<Report>().await? {
            RunOutcome::Finished((report, _)) => {
                println!("deleted: {}; {}", report.deleted, report.summary);
                return Ok(());
            }
            RunOutcome::AwaitingApproval(pending) => {
                // Store `pending` wherever people look (it is `Serialize`; the runtime
                // lists it too: `agent.pending_approvals(&session)`); resume later.
                request = agent.session(&session);
                for approval in pending {
                    eprintln!(
                        "`{}` wants to run with\n{}\napprove? [y/N]",
                        approval.tool, approval.arguments
                    );
                    let mut answer = String::new();
                    std::io::stdin().lock().read_line(&mut answer)?;
                    let decision = if answer.trim().eq_ignore_ascii_case("y") {
                        ApprovalDecision::ApproveOnce
                    } else {
                        ApprovalDecision::Deny {
                            reason: Some("the operator said no".into()),
                        }
                    };
                    request = request.decide(approval, decision);
                }
            }
            // `RunOutcome` may grow: an outcome this code does not know ends it.
            other => return Err(format!("unexpected outcome: {other:?}").into()),
        }
    }
}
