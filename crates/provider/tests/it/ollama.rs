//! The Ollama native client against a real local HTTP server replaying recorded
//! NDJSON streams.

use futures::StreamExt;
use oxydra_provider::{
    OllamaProvider, Provider, ProviderConfig, ProviderError, ProviderRequest, ProviderResponse,
    StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture, fixture_text};
use oxydra_types::{FinishReason, Message, StreamItem, Usage};
use tokio_util::sync::CancellationToken;

fn ndjson(body: impl Into<Vec<u8>>) -> Reply {
    Reply::new(200)
        .header("content-type", "application/x-ndjson")
        .body(body)
}

fn ollama(url: String) -> OllamaProvider {
    OllamaProvider::new(ProviderConfig::new(url, None))
}

fn request() -> ProviderRequest {
    ProviderRequest::new("qwen3:4b", vec![Message::user("hi")])
}

async fn collect(provider: &dyn Provider) -> Result<Vec<StreamItem>, ProviderError> {
    let mut stream = provider
        .stream(&request(), &CancellationToken::new())
        .await?;
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item?);
    }
    Ok(items)
}

/// Streams fixture `name` whole and in 5- and 64-byte pieces; all must give the same
/// items.
async fn stream_fixture(name: &str) -> (ProviderResponse, Vec<StreamItem>) {
    let mut runs = Vec::new();
    for chunk in [0, 5, 64] {
        let server = MockServer::start(vec![ndjson(fixture(name)).chunked(chunk)]).unwrap();
        let items = collect(&ollama(server.url("")))
            .await
            .unwrap_or_else(|e| panic!("{name} (chunk {chunk}): {e}"));
        runs.push(items);
    }
    assert_eq!(runs[0], runs[1], "{name}: chunking changed the items");
    assert_eq!(runs[0], runs[2], "{name}: chunking changed the items");
    let items = runs.swap_remove(0);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    (acc.finish().unwrap(), items)
}

#[tokio::test]
async fn thinking_then_a_whole_tool_call() {
    let (response, _) = stream_fixture("local/ollama_qwen3_thinking_tool_call.ndjson").await;
    let reasoning = response.reasoning.clone().unwrap();
    assert!(reasoning.starts_with("Okay, the user is asking about the current weather"));
    assert!(reasoning.ends_with("just the tool call.\n"));
    assert_eq!(response.message.content, None);
    let call = &response.message.tool_calls[0];
    assert_eq!(
        (
            call.id.as_str(),
            call.name.as_str(),
            call.arguments.as_str()
        ),
        ("call_REDACTED_1", "get_weather", r#"{"city":"Tokyo"}"#)
    );
    assert_eq!(
        response.finish_reason,
        FinishReason::ToolCalls,
        "done_reason stop despite calls"
    );
    assert_eq!(response.usage, Usage::new(234, 517, 0));
}

#[tokio::test]
async fn parallel_calls_each_in_its_own_line() {
    let (response, _) = stream_fixture("local/ollama_qwen3_parallel_tool_calls.ndjson").await;
    let calls: Vec<(&str, &str, &str)> = response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_REDACTED_1", "lookup_harbor_label", "{}"),
            ("call_REDACTED_2", "lookup_orchard_label", "{}"),
        ]
    );
    assert!(
        !response.message.text().is_empty(),
        "think: false puts the reasoning in content"
    );
    assert_eq!(response.reasoning, None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(262, 473, 0));
}

#[tokio::test]
async fn the_request_goes_to_api_chat_streamed() {
    let server = MockServer::start(vec![ndjson(fixture(
        "local/ollama_qwen3_thinking_tool_call.ndjson",
    ))])
    .unwrap();
    collect(&ollama(format!("{}/v1", server.url(""))))
        .await
        .unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/api/chat");
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], "qwen3:4b");
    assert_eq!(sent.authorization(), None, "no key, no auth header");
}

#[tokio::test]
async fn a_whole_response_without_streaming() {
    let body = r#"{"model":"qwen3:4b","message":{"role":"assistant","content":"Hi!","thinking":"greet"},"done":true,"done_reason":"stop","prompt_eval_count":9,"eval_count":3}"#;
    let server = MockServer::start(vec![Reply::json(200, body)]).unwrap();
    let response = OllamaProvider::new(ProviderConfig::new(server.url(""), Some("ok-key".into())))
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "Hi!");
    assert_eq!(response.reasoning.as_deref(), Some("greet"));
    assert_eq!(response.usage, Usage::new(9, 3, 0));
    let sent = &server.requests()[0];
    assert_eq!(sent.body["stream"], false);
    assert_eq!(sent.authorization(), Some("Bearer ok-key"));
}

#[tokio::test]
async fn a_stream_cut_before_done_fails() {
    let whole = fixture_text("local/ollama_qwen3_thinking_tool_call.ndjson");
    let cut = whole.trim_end().rsplit_once('\n').unwrap().0.to_owned();
    let server = MockServer::start(vec![ndjson(cut)]).unwrap();
    let error = collect(&ollama(server.url(""))).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Transport { message } if message.contains("\"done\": true")),
        "{error:?}"
    );
    // Cut inside the last line: it is read at the end of the body and does not parse.
    let server = MockServer::start(vec![ndjson(whole[..whole.len() - 30].to_owned())]).unwrap();
    let error = collect(&ollama(server.url(""))).await.unwrap_err();
    assert!(matches!(error, ProviderError::Decode { .. }), "{error:?}");
}

#[tokio::test]
async fn garbage_error_lines_and_empty_bodies() {
    for body in ["<html>502</html>\n", "[1,2]\n", ""] {
        let server = MockServer::start(vec![ndjson(body)]).unwrap();
        let error = collect(&ollama(server.url(""))).await.unwrap_err();
        assert!(
            matches!(error, ProviderError::Decode { .. }),
            "{body:?}: {error:?}"
        );
    }
    let server = MockServer::start(vec![ndjson(
        "{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model\"}\n",
    )])
    .unwrap();
    let error = collect(&ollama(server.url(""))).await.unwrap_err();
    assert!(
        error.to_string().contains("while running the model"),
        "{error}"
    );
}

#[tokio::test]
async fn a_model_that_is_not_pulled_is_a_clear_error() {
    let server = MockServer::start(vec![Reply::json(
        404,
        r#"{"error":"model \"qwen3:4b\" not found, try pulling it first"}"#,
    )])
    .unwrap();
    let error = collect(&ollama(server.url(""))).await.unwrap_err();
    assert!(
        error.to_string().contains("try pulling it first"),
        "{error}"
    );
}

#[tokio::test]
async fn huge_lines_stop_at_the_caps() {
    let line = format!(
        "{{\"message\":{{\"content\":\"{}\"}},\"done\":false}}\n",
        "y".repeat(64 * 1024)
    );
    let server = MockServer::start(vec![ndjson(line)]).unwrap();
    let provider = OllamaProvider::new(
        ProviderConfig::new(server.url(""), None).with_max_response_bytes(16 * 1024),
    );
    let error = collect(&provider).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { .. }),
        "{error:?}"
    );
    let server = MockServer::start(vec![
        ndjson("{\"message\":{\"content\":\"").endless("z", 4 << 20),
    ])
    .unwrap();
    let provider = OllamaProvider::new(
        ProviderConfig::new(server.url(""), None).with_max_response_bytes(16 * 1024),
    );
    let error = collect(&provider).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { what, .. } if what.contains("NDJSON line")),
        "{error:?}"
    );
}
