//! Broken streams from the real clients: cut, malformed, errors inside a 200.

use futures::StreamExt;
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{Message, StreamItem};
use tokio_util::sync::CancellationToken;

fn request() -> ProviderRequest {
    ProviderRequest::new("m", vec![Message::user("hi")])
}

/// Streams `reply` and returns the items before the first error, and that error.
async fn run(provider: &dyn Provider) -> (Vec<StreamItem>, Option<ProviderError>) {
    let mut stream = provider
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(item) => items.push(item),
            Err(error) => {
                assert!(
                    stream.next().await.is_none(),
                    "the stream ends after an error"
                );
                return (items, Some(error));
            }
        }
    }
    (items, None)
}

fn openai(url: String) -> OpenAiProvider {
    OpenAiProvider::new(ProviderConfig::new(url, None))
}

fn anthropic(url: String) -> AnthropicProvider {
    AnthropicProvider::new(ProviderConfig::new(url, None))
}

#[tokio::test]
async fn openai_stream_cut_before_done_is_an_error() {
    let full = String::from_utf8(fixture("openai/gpt4o_complex_run_turn2.sse")).unwrap();
    let cut = full.replace("data: [DONE]", "");
    let server = MockServer::repeating(vec![Reply::sse(cut).chunked(7)]).unwrap();
    let (items, error) = run(&openai(server.url("/v1"))).await;
    assert!(!items.iter().any(|i| matches!(i, StreamItem::Finish(_))));
    assert!(
        matches!(error, Some(ProviderError::Transport { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn anthropic_stream_cut_before_message_stop_is_an_error() {
    let full = String::from_utf8(fixture("anthropic/tool_use_response.sse")).unwrap();
    let cut = &full[..full.find("event: message_stop").unwrap()];
    let server = MockServer::repeating(vec![Reply::sse(cut.to_owned())]).unwrap();
    let (items, error) = run(&anthropic(server.url(""))).await;
    assert!(!items.is_empty());
    match error {
        Some(ProviderError::Transport { message }) => assert!(message.contains("message_stop")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn malformed_sse_line_is_a_decode_error_with_excerpt() {
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"broken\"}\n\n\
                data: [DONE]\n\n";
    let server = MockServer::repeating(vec![Reply::sse(body)]).unwrap();
    let (items, error) = run(&openai(server.url("/v1"))).await;
    assert_eq!(items, vec![StreamItem::Text("ok".into())]);
    match error {
        Some(ProviderError::Decode { what, excerpt }) => {
            assert!(what.contains("OpenAI stream chunk"), "{what}");
            assert!(excerpt.contains("\"content\":\"broken\""), "{excerpt}");
        }
        other => panic!("{other:?}"),
    }

    let body = "event: message_start\ndata: {not json at all\n\n";
    let server = MockServer::repeating(vec![Reply::sse(body)]).unwrap();
    let (_, error) = run(&anthropic(server.url(""))).await;
    assert!(
        matches!(error, Some(ProviderError::Decode { excerpt, .. }) if excerpt == "{not json at all")
    );
}

#[tokio::test]
async fn anthropic_error_event_inside_200_fails_the_stream() {
    let full = String::from_utf8(fixture("anthropic/basic_response.sse")).unwrap();
    let start = &full[..full.find("event: content_block_stop").unwrap()];
    let body = format!(
        "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let server = MockServer::repeating(vec![Reply::sse(body)]).unwrap();
    let (items, error) = run(&anthropic(server.url(""))).await;
    assert!(items.iter().any(|i| matches!(i, StreamItem::Text(_))));
    assert!(
        matches!(error, Some(ProviderError::Overloaded { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn invalid_tool_arguments_are_handed_on_raw() {
    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_x\",\"type\":\"function\",\"function\":{\"name\":\"file_read\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\": \\\"a\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let server = MockServer::repeating(vec![Reply::sse(body)]).unwrap();
    let (items, error) = run(&openai(server.url("/v1"))).await;
    assert!(error.is_none());
    let mut acc = oxydra_provider::StreamAccumulator::new();
    items.iter().for_each(|i| acc.push(i));
    let response = acc.finish().unwrap();
    assert_eq!(response.message.tool_calls[0].arguments, "{\"path\": \"a");
    assert!(response.message.tool_calls[0].parsed_arguments().is_err());
}

#[tokio::test]
async fn context_length_errors_are_recognised() {
    let body = r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 20000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = MockServer::repeating(vec![Reply::json(400, body)]).unwrap();
    let error = openai(server.url("/v1"))
        .stream(&request(), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(error, ProviderError::ContextLengthExceeded { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let error = openai(format!("http://{addr}/v1"))
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_200_body_that_is_not_an_event_stream_is_a_decode_error() {
    let server =
        MockServer::repeating(vec![Reply::json(200, r#"{"error":"model not loaded"}"#)]).unwrap();
    let (items, error) = run(&openai(server.url("/v1"))).await;
    assert!(items.is_empty());
    match error {
        Some(ProviderError::Decode { what, excerpt }) => {
            assert!(what.contains("held no events"), "{what}");
            assert_eq!(excerpt, r#"{"error":"model not loaded"}"#);
        }
        other => panic!("{other:?}"),
    }
}
