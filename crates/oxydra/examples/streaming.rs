//! Streaming a run's events to the terminal: text as it arrives, tool calls as they
//! start and finish, then the cost.
//!
//! `OPENAI_API_KEY=… cargo run --example streaming`

use std::io::Write;

use oxydra::runtime::AgentRuntime;
use oxydra::types::{RuntimeEvent, SessionId};
use oxydra::{CancellationToken, tool};

/// Adds two numbers.
#[tool(read_only)]
async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> Result<String, std::fmt::Error> {
    Ok((a + b).to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .tool(Add)
        .build()?;
    let cancel = CancellationToken::new();
    let (mut events, outcome) = agent
        .session(&SessionId::generate())
        .prompt("What is 1.5 + 2.25?")
        .cancel(&cancel)
        .stream();
    let mut out = std::io::stdout();
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::TextDelta { text } => {
                write!(out, "{text}")?;
                out.flush()?;
            }
            RuntimeEvent::ToolStarted { name, .. } => eprintln!("[{name} …]"),
            RuntimeEvent::ToolCompleted {
                name, duration_ms, ..
            } => eprintln!("[{name} done in {duration_ms} ms]"),
            RuntimeEvent::ToolFailed { name, error, .. } => eprintln!("[{name} failed: {error}]"),
            RuntimeEvent::Final { turns, cost, .. } => {
                eprintln!("\n{turns} turns, ${cost:.4}");
            }
            _ => {}
        }
    }
    outcome.await?;
    Ok(())
}
