//! A hostile provider streams without end: the clients stop at the response cap.

use std::time::Duration;

use futures::StreamExt;
use oxydra_provider::{
    AnthropicProvider, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
};
use oxydra_test_support::{MockServer, Reply};
use oxydra_types::{Message, StreamItem};
use tokio_util::sync::CancellationToken;

/// The cap the clients get in these tests.
const CAP: usize = 1024 * 1024;
/// What the server is willing to send: far past the cap.
const ENDLESS: usize = 200 * 1024 * 1024;

/// A server that answers one request with `head` and then `piece` over and over
/// (generated as it goes, never held whole), up to [`ENDLESS`] bytes or until the
/// client hangs up. It counts the bytes it managed to send.
fn endless(head: String, piece: String) -> (String, MockServer) {
    let server = MockServer::start(vec![Reply::sse(head).endless(piece, ENDLESS)]).unwrap();
    (server.url(""), server)
}

fn config(url: &str) -> ProviderConfig {
    ProviderConfig::new(url, None).with_max_response_bytes(CAP)
}

/// Streams until the first error; returns the items' text bytes and that error.
async fn drain(provider: &dyn Provider) -> (usize, ProviderError) {
    let request = ProviderRequest::new("m", vec![Message::user("hi")]);
    let mut stream = provider
        .stream(&request, &CancellationToken::new())
        .await
        .unwrap();
    let mut bytes = 0;
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamItem::Text(text)) => bytes += text.len(),
            Ok(StreamItem::ToolCallDelta(delta)) => bytes += delta.arguments.len(),
            Ok(_) => {}
            Err(error) => return (bytes, error),
        }
    }
    panic!("an endless stream ended without an error");
}

/// The server saw the client hang up not far past the cap (socket buffers hold a
/// few MiB), nowhere near the 200 MiB it would have sent.
async fn assert_stopped_near_the_cap(server: MockServer) {
    assert!(
        server.wait_idle_async(Duration::from_secs(10)).await,
        "the client never hung up"
    );
    let sent = server.bytes_sent();
    assert!(sent < ENDLESS, "the client read all {sent} bytes");
    assert!(sent < 16 * CAP, "the client read {sent} bytes");
}

fn assert_too_large(error: &ProviderError) {
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("the response exceeded"),
        "{error}"
    );
    assert!(!oxydra_provider::is_retryable(error));
}

#[tokio::test]
async fn openai_endless_text_stops_at_the_cap() {
    let piece = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
        "x".repeat(4096)
    );
    let (url, server) = endless(String::new(), piece);
    let provider = OpenAiProvider::new(config(&url));
    let (bytes, error) = drain(&provider).await;
    drop(provider);
    assert_too_large(&error);
    assert!(bytes <= CAP, "{bytes} bytes of text came out");
    assert!(bytes > CAP / 2, "only {bytes} bytes came out");
    assert_stopped_near_the_cap(server).await;
}

#[tokio::test]
async fn openai_endless_tool_arguments_stop_at_the_cap() {
    let head = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"file_write\",\"arguments\":\"\"}}]}}]}\n\n".to_owned();
    let piece = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{}\"}}}}]}}}}]}}\n\n",
        "a".repeat(4096)
    );
    let (url, server) = endless(head, piece);
    let (bytes, error) = drain(&OpenAiProvider::new(config(&url))).await;
    assert_too_large(&error);
    assert!(bytes <= CAP, "{bytes} bytes of arguments came out");
    assert_stopped_near_the_cap(server).await;
}

/// Empty tool-call fragments carry no text, yet each one costs memory to assemble:
/// they count toward the cap too.
#[tokio::test]
async fn openai_endless_empty_tool_call_fragments_stop_at_the_cap() {
    let head = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n".to_owned();
    let piece = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n".to_owned();
    let (url, server) = endless(head, piece);
    let (_, error) = drain(&OpenAiProvider::new(config(&url))).await;
    assert_too_large(&error);
    assert_stopped_near_the_cap(server).await;
}

#[tokio::test]
async fn anthropic_endless_text_and_tool_input_stop_at_the_cap() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n";
    let text_block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let text = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
        "x".repeat(4096)
    );
    let (url, server) = endless(format!("{start}{text_block}"), text);
    let (bytes, error) = drain(&AnthropicProvider::new(config(&url))).await;
    assert_too_large(&error);
    assert!(bytes <= CAP);
    assert_stopped_near_the_cap(server).await;

    let tool_block = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"file_write\",\"input\":{}}}\n\n";
    let json = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}}}\n\n",
        "a".repeat(4096)
    );
    let (url, server) = endless(format!("{start}{tool_block}"), json);
    let (bytes, error) = drain(&AnthropicProvider::new(config(&url))).await;
    assert_too_large(&error);
    assert!(bytes <= CAP);
    assert_stopped_near_the_cap(server).await;
}

/// One event that never ends (a `data:` line without a newline) is cut off too.
#[tokio::test]
async fn one_endless_event_stops_at_the_event_cap() {
    let (url, server) = endless(
        "data: {\"choices\":[{\"delta\":{\"content\":\"".to_owned(),
        "y".repeat(8192),
    );
    let (bytes, error) = drain(&OpenAiProvider::new(config(&url))).await;
    assert_eq!(bytes, 0);
    assert_too_large(&error);
    assert!(
        error.to_string().contains("bytes in one server-sent event"),
        "{error}"
    );
    assert_stopped_near_the_cap(server).await;
}

/// A non-streamed answer is read no further than its cap either.
#[tokio::test]
async fn an_endless_complete_body_stops_at_the_cap() {
    let head = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"".to_owned();
    let (url, server) = endless(head, "z".repeat(8192));
    let provider = OpenAiProvider::new(config(&url));
    let request = ProviderRequest::new("m", vec![Message::user("hi")]);
    let error = provider
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    drop(provider);
    assert_too_large(&error);
    assert!(error.to_string().contains("bytes of body"), "{error}");
    assert_stopped_near_the_cap(server).await;
}
