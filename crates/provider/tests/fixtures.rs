//! Every recorded stream in the shared fixtures, served over a real local HTTP server
//! and parsed by the real clients.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use futures::StreamExt;
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ProviderResponse, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{FinishReason, Message, StreamItem, Usage};
use tokio_util::sync::CancellationToken;

fn request(model: &str) -> ProviderRequest {
    ProviderRequest::new(model, vec![Message::user("hi")])
}

/// Streams `name` through `provider`, served whole and in 7-byte pieces; both must
/// give the same items. Returns the assembled response and the items.
async fn stream_fixture(
    name: &str,
    make: impl Fn(String) -> Box<dyn Provider>,
    suffix: &str,
) -> (ProviderResponse, Vec<StreamItem>) {
    let mut results = Vec::new();
    for chunk in [0, 7, 64] {
        let server = MockServer::repeating(vec![Reply::sse(fixture(name)).chunked(chunk)]).unwrap();
        let provider = make(server.url(suffix));
        let mut stream = provider
            .stream(&request("m"), &CancellationToken::new())
            .await
            .unwrap();
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            items.push(item.unwrap_or_else(|e| panic!("{name} (chunk {chunk}): {e}")));
        }
        assert!(
            matches!(items.last(), Some(StreamItem::Finish(_))),
            "{name}: finish last"
        );
        results.push(items);
    }
    assert_eq!(results[0], results[1], "{name}: chunking changed the items");
    assert_eq!(results[0], results[2], "{name}: chunking changed the items");
    let items = results.swap_remove(0);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    (acc.finish().unwrap(), items)
}

fn openai(url: String) -> Box<dyn Provider> {
    Box::new(OpenAiProvider::new(ProviderConfig::new(
        url,
        Some("sk-test".into()),
    )))
}

fn anthropic(url: String) -> Box<dyn Provider> {
    Box::new(AnthropicProvider::new(ProviderConfig::new(
        url,
        Some("sk-ant".into()),
    )))
}

fn calls(response: &ProviderResponse) -> Vec<(&str, &str, &str)> {
    response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect()
}

#[tokio::test]
async fn openai_parallel_tool_calls() {
    let (response, items) =
        stream_fixture("openai/gpt4o_complex_run_turn1.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![
            ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", "{}"),
            ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", "{}"),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(364, 40, 0));
    assert_eq!(response.message.content, None);
    // The usage-only chunk after finish_reason still comes before Finish.
    let n = items.len();
    assert!(matches!(items[n - 2], StreamItem::Usage(_)));
}

#[tokio::test]
async fn openai_arguments_split_over_many_deltas() {
    let (response, _) = stream_fixture("openai/gpt4o_complex_run_turn2.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![(
            "call_LwxJUB9KppVyogRRLQsamRJv",
            "get_weather",
            r#"{"city":"Mexico City"}"#
        )]
    );
    assert_eq!(response.usage, Usage::new(423, 15, 0));
}

#[tokio::test]
async fn openai_long_nested_arguments() {
    let (response, _) = stream_fixture("openai/gpt4o_complex_run_turn3.sse", openai, "/v1").await;
    let expected = r#"{"answers":[{"label":"Capital","answer":"The capital of Mexico is Mexico City."},{"label":"Weather","answer":"The weather in Mexico City is currently sunny."},{"label":"Product Name","answer":"The product name is Pydantic AI."}]}"#;
    assert_eq!(
        calls(&response),
        vec![("call_CCGIWaMeYWmxOQ91orkmTvzn", "final_result", expected)]
    );
    assert_eq!(response.usage, Usage::new(448, 62, 0));
    let parsed = response.message.tool_calls[0].parsed_arguments().unwrap();
    assert_eq!(
        parsed["answers"][2]["answer"],
        "The product name is Pydantic AI."
    );
}

#[tokio::test]
async fn openai_mini_tool_call_then_text() {
    let (response, _) = stream_fixture("openai/gpt4o_mini_stream_turn1.sse", openai, "/v1").await;
    assert_eq!(
        calls(&response),
        vec![(
            "call_ZR5UUuTt3pf61kjwAJIYdVMj",
            "get_capital",
            r#"{"country":"UK"}"#
        )]
    );
    assert_eq!(response.usage, Usage::new(53, 15, 0));

    let (response, _) = stream_fixture("openai/gpt4o_mini_stream_turn2.sse", openai, "/v1").await;
    assert_eq!(response.message.text(), "The capital of the UK is London.");
    assert!(response.message.tool_calls.is_empty());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(78, 9, 0));
}

#[tokio::test]
async fn anthropic_text_ping_and_split_tool_json() {
    let (response, _) = stream_fixture("anthropic/tool_use_response.sse", anthropic, "").await;
    assert_eq!(
        response.message.text(),
        "I'll check the current weather in Paris for you."
    );
    assert_eq!(
        calls(&response),
        vec![(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            r#"{"location": "Paris"}"#
        )]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(377, 65, 0));
}

#[tokio::test]
async fn anthropic_basic_text() {
    let (response, _) = stream_fixture("anthropic/basic_response.sse", anthropic, "").await;
    assert_eq!(response.message.text(), "Hello there!");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(11, 6, 0));
}

#[tokio::test]
async fn anthropic_cut_off_tool_json_is_kept_raw() {
    let (response, _) = stream_fixture(
        "anthropic/incomplete_partial_json_response.sse",
        anthropic,
        "",
    )
    .await;
    assert_eq!(
        response.message.text(),
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
    );
    let call = &response.message.tool_calls[0];
    assert_eq!(call.id.as_str(), "toolu_01EKqbqmZrGRXy18eN7m9kvY");
    assert_eq!(call.name, "make_file");
    assert_eq!(
        call.arguments,
        "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes"
    );
    assert!(call.parsed_arguments().is_err(), "never silently {{}}");
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.usage, Usage::new(450, 124, 0));
}

#[tokio::test]
async fn anthropic_refusal() {
    let (response, _) = stream_fixture("anthropic/refusal_response.sse", anthropic, "").await;
    assert_eq!(response.finish_reason, FinishReason::Refusal);
    assert_eq!(response.message.text(), "");
    assert_eq!(response.usage, Usage::new(20, 0, 0));
}

#[tokio::test]
async fn openrouter_429_body_is_rate_limited_with_retry_after() {
    let server = MockServer::repeating(vec![
        Reply::json(429, fixture("openai/openrouter_429_rate_limited.json"))
            .header("retry-after", "2"),
    ])
    .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.url("/api/v1"), None));
    let error = provider
        .complete(
            &request("google/gemini-2.0-flash-exp:free"),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match error {
        ProviderError::RateLimited {
            retry_after,
            message,
        } => {
            assert_eq!(retry_after, Some(std::time::Duration::from_secs(2)));
            assert!(
                message.contains("temporarily rate-limited upstream"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests()[0].path, "/api/v1/chat/completions");
}
