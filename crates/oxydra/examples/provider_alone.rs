//! A provider used alone, without the agent loop: one completion with its token
//! usage and cost.
//!
//! `OPENAI_API_KEY=… cargo run --example provider_alone`

use oxydra::CancellationToken;
use oxydra::provider::{ProviderRequest, cost, from_env};
use oxydra::types::Message;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = from_env("openai")?;
    let messages = vec![
        Message::system("Answer in one sentence."),
        Message::user("Why is the sky blue?"),
    ];
    let request = ProviderRequest::new("gpt-4o-mini", messages);
    let response = provider
        .complete(&request, &CancellationToken::new())
        .await?;
    println!("{}", response.message.text());
    let usage = response.usage;
    let dollars = cost(&request.model, &usage);
    eprintln!(
        "{} tokens in, {} out, ${dollars:.6}",
        usage.input_tokens, usage.output_tokens
    );
    Ok(())
}
