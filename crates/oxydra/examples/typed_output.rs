//! Typed output: the answer arrives as a Rust value that passed its JSON Schema,
//! streamed: the events as they happen, then the value.
//!
//! `OPENAI_API_KEY=… cargo run --example typed_output` (or `OPENAI_BASE_URL` for an
//! OpenAI-compatible server of your own).

use oxydra::runtime::{AgentRuntime, RunOutcome};
use oxydra::schemars::JsonSchema;
use oxydra::serde::Deserialize;
use oxydra::types::{RuntimeEvent, SessionId};

/// What the model must answer with.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(crate = "oxydra::serde")]
#[schemars(crate = "oxydra::schemars")]
struct Capital {
    /// The country.
    country: String,
    /// Its capital city.
    capital: String,
    /// Roughly how many people live there.
    population: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .build()?;
    // The short form: `agent.run_typed::<Capital>(prompt).await?`. The long form
    // streams, and says when a run waits for a person instead of failing.
    let (mut events, handle) = agent
        .session(&SessionId::generate())
        .prompt("What is the capital of France?")
        .output::<Capital>()
        .stream();
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::ToolFailed { name, error, .. } => eprintln!("[{name} retried: {error}]"),
            RuntimeEvent::Progress(progress) => eprintln!("{}", progress.message),
            _ => {}
        }
    }
    match handle.await? {
        RunOutcome::Finished((answer, _)) => println!(
            "{} is the capital of {} ({} people)",
            answer.capital, answer.country, answer.population
        ),
        other => eprintln!("the run did not finish: {other:?}"),
    }
    Ok(())
}
