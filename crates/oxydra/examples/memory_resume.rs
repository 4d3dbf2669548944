//! Memory and resuming a session: SQLite keeps every message, so a later run (or
//! another process) continues the conversation from its session id.
//!
//! `OPENAI_API_KEY=… cargo run --example memory_resume -- notes.db`

use std::sync::Arc;

use oxydra::memory::{SqliteConfig, SqliteMemory};
use oxydra::runtime::AgentRuntime;
use oxydra::{CancellationToken, types::SessionId};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "oxydra-example.db".into());
    // Opening applies migrations (file I/O): `open_async` does it off the async threads.
    let memory = Arc::new(SqliteMemory::open_async(&path, SqliteConfig::default()).await?);
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .memory(memory)
        .build()?;
    let first = agent.run("My name is Ada. Remember it.").await?;
    println!("{}", first.final_text);

    // Later — in this process or another one sharing the database — continue it.
    let session: SessionId = first.session_id;
    let cancel = CancellationToken::new();
    let next = agent
        .session(&session)
        .prompt("What is my name?")
        .cancel(&cancel)
        .await?;
    println!("{}", next.final_text);
    let stored = agent.session_messages(&session).await?;
    eprintln!("session {session}: {} messages stored", stored.len());
    Ok(())
}
