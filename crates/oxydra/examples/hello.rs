//! Hello agent: one tool made with `#[tool]`, a provider from the environment.

use oxydra::{runtime::AgentRuntime, tool};

/// Tells the weather in a city.
#[tool(read_only)]
async fn weather(city: String) -> Result<String, std::fmt::Error> {
    Ok(format!("Sunny and 21 °C in {city}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .tool(Weather)
        .build()?;
    println!("{}", agent.run("Weather in Paris?").await?.final_text);
    Ok(())
}
