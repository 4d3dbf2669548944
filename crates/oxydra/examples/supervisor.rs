//! A supervisor with sub-agents: each sub-agent is an `AgentRuntime` of its own
//! (model, tools, budget) offered to the supervisor as a tool. Their events reach
//! the supervisor's stream nested under the call that started them.
//!
//! `OPENAI_API_KEY=… cargo run --example supervisor`

use std::sync::Arc;

use oxydra::runtime::{AgentRuntime, CollectingEventSink, RuntimeLimits};
use oxydra::tool;
use oxydra::types::RuntimeEvent;

/// Looks a word up in the dictionary.
#[tool(read_only)]
async fn define(
    /// The word.
    word: String,
) -> Result<String, std::fmt::Error> {
    Ok(format!("{word}: a word worth knowing"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events = Arc::new(CollectingEventSink::new());
    // Four turns at most (`RuntimeLimits` may gain fields: default, then assign).
    let mut lexicographer_limits = RuntimeLimits::default();
    lexicographer_limits.max_turns = 4;
    let lexicographer = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .system_prompt("You define words precisely, using your dictionary.")
        .tool(Define)
        .limits(lexicographer_limits)
        .build()?;
    let supervisor = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .system_prompt("You delegate definitions to the lexicographer.")
        .tool(
            lexicographer
                .as_tool("lexicographer", "Defines words")
                .events_to(events.clone()),
        )
        .event_sink(events.clone())
        .build()?;
    let outcome = supervisor.run("What does 'oxydra' mean?").await?;
    let nested = events
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::SubAgent { .. }))
        .count();
    eprintln!("{nested} events from sub-agents");
    println!("{}", outcome.final_text);
    Ok(())
}
