//! Typed output: the answer arrives as a Rust value that passed its JSON Schema.
//!
//! `OPENAI_API_KEY=… cargo run --example typed_output` (or `OPENAI_BASE_URL` for an
//! OpenAI-compatible server of your own).

use oxydra::runtime::AgentRuntime;
use oxydra::schemars::JsonSchema;
use oxydra::serde::Deserialize;

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
    let answer: Capital = agent.run_typed("What is the capital of France?").await?;
    println!(
        "{} is the capital of {} ({} people)",
        answer.capital, answer.country, answer.population
    );
    Ok(())
}
