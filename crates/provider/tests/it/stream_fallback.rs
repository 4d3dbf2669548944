//! The stream → complete fallback of `ReliableProvider` over real HTTP, counting the
//! streamed and the plain requests the server receives.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use oxydra_provider::{
    OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest, ReliableProvider,
    RetryPolicy, StreamAccumulator,
};
use oxydra_test_support::{MockServer, RecordedRequest, Reply, fixture};
use oxydra_types::{Message, StreamItem};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SERVER_ERROR_EVENT: &str =
    "data: {\"error\":{\"message\":\"Internal error\",\"type\":\"server_error\"}}\n\n";

fn fast() -> RetryPolicy {
    RetryPolicy::default()
        .with_base_delay(Duration::from_millis(1))
        .with_max_delay(Duration::from_millis(5))
        .with_max_attempts(3)
}

fn openai(url: String, policy: RetryPolicy) -> ReliableProvider {
    ReliableProvider::new(
        Arc::new(OpenAiProvider::new(ProviderConfig::new(url, None))),
        policy,
    )
}

fn request() -> ProviderRequest {
    ProviderRequest::new("smollm2", vec![Message::user("list plan.md")])
}

fn completion(text: &str) -> String {
    json!({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,
        "message":{"role":"assistant","content":text},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})
    .to_string()
}

fn streamed(requests: &[RecordedRequest]) -> usize {
    requests
        .iter()
        .filter(|r| r.body.get("stream") == Some(&json!(true)))
        .count()
}

async fn answer(provider: &ReliableProvider) -> Result<Vec<StreamItem>, ProviderError> {
    provider
        .stream(&request(), &CancellationToken::new())
        .await?
        .try_collect()
        .await
}

#[tokio::test]
async fn a_transient_stream_failure_falls_back_once_and_streaming_stays_on() {
    let server = MockServer::repeating(vec![
        Reply::sse(SERVER_ERROR_EVENT),
        Reply::json(200, completion("from complete")),
        Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    let first = answer(&provider).await.unwrap();
    assert_eq!(first[0], StreamItem::Text("from complete".into()));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["stream"], true);
    assert_ne!(requests[1].body.get("stream"), Some(&json!(true)));
    assert!(!provider.streaming_disabled());

    // A server error inside one stream says nothing about the next: it streams.
    let second = answer(&provider).await.unwrap();
    let mut acc = StreamAccumulator::new();
    second.iter().for_each(|item| acc.push(item));
    assert_eq!(
        acc.finish().unwrap().message.text(),
        "The capital of the UK is London."
    );
    assert_eq!(server.hits(), 3);
    assert_eq!(streamed(&server.requests()), 2);
}

#[tokio::test]
async fn the_fallback_shares_the_policy_attempts_and_is_not_repeated() {
    // The stream breaks; every plain request then fails with 502.
    let server = MockServer::repeating(vec![
        Reply::sse(SERVER_ERROR_EVENT),
        Reply::json(502, r#"{"error":{"message":"bad gateway"}}"#),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    let error = answer(&provider).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Server { status: 502, .. }),
        "{error:?}"
    );
    // Three attempts in all: one stream, then two plain requests; no second stream.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(streamed(&requests), 1);
}

#[tokio::test]
async fn a_rate_limit_inside_a_stream_is_retried_as_a_stream() {
    let rate_limited =
        "data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\"}}\n\n";
    let server = MockServer::repeating(vec![
        Reply::sse(rate_limited),
        Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    let items = answer(&provider).await.unwrap();
    assert!(matches!(items.last(), Some(StreamItem::Finish(_))));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(streamed(&requests), 2, "a 429 is not answered by complete");
}

/// llama-cpp-python answers a streamed request with tools by 200 and an empty body;
/// the same request unstreamed gets the recorded tool call.
#[tokio::test]
async fn an_empty_streamed_body_sends_every_later_call_straight_to_complete() {
    let tool_call = fixture("local/llama_cpp_python_tool_call_with_function_call.json");
    let server = MockServer::repeating(vec![
        Reply::sse(Vec::new()),
        Reply::json(200, tool_call.clone()),
        Reply::json(200, tool_call.clone()),
        Reply::json(200, tool_call),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    for call in 1..=3 {
        let items = answer(&provider).await.unwrap();
        let mut acc = StreamAccumulator::new();
        items.iter().for_each(|item| acc.push(item));
        let message = acc.finish().unwrap().message;
        assert_eq!(message.tool_calls.len(), 1, "call {call}");
        assert_eq!(message.tool_calls[0].name, "file_list", "call {call}");
        assert!(provider.streaming_disabled(), "call {call}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        streamed(&requests),
        1,
        "after the empty body, no streamed request is sent"
    );
}

#[tokio::test]
async fn a_body_that_is_not_an_event_stream_also_disables_streaming() {
    let server = MockServer::repeating(vec![
        Reply::sse("<html>proxy error page</html>"),
        Reply::json(200, completion("plain")),
    ])
    .unwrap();
    let provider = openai(server.url("/v1"), fast());
    for _ in 0..2 {
        let items = answer(&provider).await.unwrap();
        assert_eq!(items[0], StreamItem::Text("plain".into()));
    }
    assert!(provider.streaming_disabled());
    assert_eq!(streamed(&server.requests()), 1);
    assert_eq!(server.hits(), 3);
}
