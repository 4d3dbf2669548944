//! Fallback models of `ReliableProvider` over real HTTP: a primary that answers 529 or
//! 500 after its retries passes the same turn to the next model; errors any model
//! would meet do not.

use std::sync::Arc;
use std::time::Duration;

use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ReliableProvider, RetryPolicy, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{Message, RuntimeEvent, StreamItem};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

fn fast() -> RetryPolicy {
    RetryPolicy::default()
        .with_base_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(5))
        .with_max_attempts(2)
}

fn request() -> ProviderRequest {
    ProviderRequest::new("claude-primary", vec![Message::user("hi")])
}

fn anthropic(url: String) -> Arc<dyn Provider> {
    Arc::new(AnthropicProvider::new(ProviderConfig::new(
        url,
        Some("k".into()),
    )))
}

fn openai(url: String) -> Arc<dyn Provider> {
    Arc::new(OpenAiProvider::new(ProviderConfig::new(url, None)))
}

fn anthropic_message(text: &str) -> String {
    json!({"content":[{"type":"text","text":text}],"stop_reason":"end_turn",
        "usage":{"input_tokens":3,"output_tokens":2}})
    .to_string()
}

#[tokio::test]
async fn an_overloaded_primary_passes_the_turn_to_the_fallback_model() {
    let primary = MockServer::repeating(vec![Reply::json(529, OVERLOADED)]).unwrap();
    let fallback =
        MockServer::start(vec![Reply::json(200, anthropic_message("from fallback"))]).unwrap();
    let provider = ReliableProvider::new(anthropic(primary.url("")), fast())
        .with_fallback_model(anthropic(fallback.url("")), "claude-fallback");
    assert_eq!(provider.fallback_models(), ["claude-fallback"]);
    let response = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.content.as_deref(), Some("from fallback"));
    assert_eq!(primary.hits(), 2, "the primary had its retries first");
    let asked = &fallback.requests()[0];
    assert_eq!(
        asked.body["model"], "claude-fallback",
        "the fallback's model is asked"
    );
    assert_eq!(
        asked.body["messages"][0]["content"][0]["text"], "hi",
        "the same turn"
    );
    // The response says which model wrote it, and why.
    assert_eq!(response.fallbacks.len(), 1);
    assert_eq!(response.fallbacks[0].from, "claude-primary");
    assert_eq!(response.fallbacks[0].to, "claude-fallback");
    assert!(
        response.fallbacks[0]
            .reason
            .to_lowercase()
            .contains("overloaded"),
        "{:?}",
        response.fallbacks[0]
    );
    assert_eq!(response.answered_by("claude-primary"), "claude-fallback");
}

#[tokio::test]
async fn a_503_stream_says_the_hop_before_the_fallbacks_answer() {
    let primary =
        MockServer::repeating(vec![Reply::json(503, r#"{"error":"unavailable"}"#)]).unwrap();
    let fallback = MockServer::start(vec![Reply::sse(fixture(
        "openai/gpt4o_mini_stream_turn2.sse",
    ))])
    .unwrap();
    let provider = ReliableProvider::new(openai(primary.url("/v1")), fast())
        .with_fallback_model(openai(fallback.url("/v1")), "gpt-4o-mini");
    let stream = provider
        .stream(
            &ProviderRequest::new("gpt-primary", vec![Message::user("hi")]),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let items: Vec<StreamItem> = futures::StreamExt::collect::<Vec<_>>(stream)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let StreamItem::Event(RuntimeEvent::ModelFallback(hop)) = &items[0] else {
        panic!("the first item names the hop: {items:?}");
    };
    assert_eq!(
        (hop.from.as_str(), hop.to.as_str()),
        ("gpt-primary", "gpt-4o-mini")
    );
    assert_eq!(primary.hits(), 2);
    let mut accumulator = StreamAccumulator::new();
    for item in &items {
        accumulator.push(item);
    }
    let response = accumulator.finish().unwrap();
    assert_eq!(response.answered_by("gpt-primary"), "gpt-4o-mini");
}

#[tokio::test]
async fn a_401_stream_does_not_fall_through() {
    let primary = MockServer::repeating(vec![Reply::json(
        401,
        r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#,
    )])
    .unwrap();
    let fallback = MockServer::repeating(vec![Reply::sse(fixture(
        "openai/gpt4o_mini_stream_turn2.sse",
    ))])
    .unwrap();
    let provider = ReliableProvider::new(openai(primary.url("/v1")), fast())
        .with_fallback_model(openai(fallback.url("/v1")), "gpt-4o-mini");
    let Err(error) = provider.stream(&request(), &CancellationToken::new()).await else {
        panic!("a refused key is not answered elsewhere");
    };
    assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
    assert_eq!(fallback.hits(), 0, "the conversation went nowhere else");
}

#[tokio::test]
async fn a_streamed_turn_on_a_500_goes_to_a_fallback_of_another_kind() {
    let primary = MockServer::repeating(vec![Reply::json(500, r#"{"error":"boom"}"#)]).unwrap();
    let fallback = MockServer::start(vec![Reply::sse(fixture(
        "openai/gpt4o_mini_stream_turn2.sse",
    ))])
    .unwrap();
    let provider = ReliableProvider::new(anthropic(primary.url("")), fast())
        .with_fallback_model(openai(fallback.url("/v1")), "gpt-4o-mini");
    let stream = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let items: Vec<_> = futures::StreamExt::collect::<Vec<_>>(stream).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert!(!items.is_empty());
    assert_eq!(fallback.requests()[0].body["model"], "gpt-4o-mini");
}

#[tokio::test]
async fn the_fallbacks_are_tried_in_order_and_the_last_error_is_returned() {
    let primary = MockServer::repeating(vec![Reply::json(529, OVERLOADED)]).unwrap();
    let second = MockServer::repeating(vec![Reply::json(529, OVERLOADED)]).unwrap();
    let third = MockServer::repeating(vec![Reply::json(529, OVERLOADED)]).unwrap();
    let provider = ReliableProvider::new(anthropic(primary.url("")), fast())
        .with_fallback_model(anthropic(second.url("")), "b")
        .with_fallback_model(anthropic(third.url("")), "c");
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Overloaded { .. }),
        "{error:?}"
    );
    assert_eq!((primary.hits(), second.hits(), third.hits()), (2, 2, 2));
}

#[tokio::test]
async fn an_auth_failure_is_not_passed_on() {
    let refusal = r#"{"type":"error","error":{"type":"authentication_error","message":"bad key"}}"#;
    let primary = MockServer::repeating(vec![Reply::json(401, refusal)]).unwrap();
    let fallback = MockServer::repeating(vec![Reply::json(200, anthropic_message("no"))]).unwrap();
    let provider = ReliableProvider::new(anthropic(primary.url("")), fast())
        .with_fallback_model(anthropic(fallback.url("")), "claude-fallback");
    let error = provider
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
    assert_eq!(fallback.hits(), 0);
}
