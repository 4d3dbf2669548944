//! Hostile and broken Responses API streams: cut, garbage, huge deltas, endless
//! events the client skips, one event past its cap.

use futures::StreamExt;
use oxydra_provider::{
    OpenAiResponsesProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
};
use oxydra_test_support::{MockServer, Reply, fixture};
use oxydra_types::{Message, StreamItem};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CAP: usize = 64 * 1024;

fn provider(server: &MockServer) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(
        ProviderConfig::new(server.openai_url(), None).with_max_response_bytes(CAP),
    )
}

/// Streams the server's reply; the items before the first error, and that error.
async fn run(server: &MockServer) -> (Vec<StreamItem>, Option<ProviderError>) {
    let request = ProviderRequest::new("gpt-5", vec![Message::user("hi")]);
    let mut stream = provider(server)
        .stream(&request, &CancellationToken::new())
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

fn event(value: serde_json::Value) -> String {
    format!(
        "event: {}\ndata: {value}\n\n",
        value["type"].as_str().unwrap()
    )
}

#[tokio::test]
async fn a_stream_cut_before_completed_is_an_error() {
    let full = String::from_utf8(fixture(
        "openai-responses/gpt4o_parallel_function_calls.sse",
    ))
    .unwrap();
    for cut in [
        full.find("event: response.completed").unwrap(),
        full.len() / 2,
        // Inside an event's JSON.
        full.find("event: response.completed").unwrap() + 60,
    ] {
        let server =
            MockServer::start(vec![Reply::sse(&full.as_bytes()[..cut]).chunked(5)]).unwrap();
        let (items, error) = run(&server).await;
        assert!(!items.iter().any(|i| matches!(i, StreamItem::Finish(_))));
        match error {
            Some(ProviderError::Transport { message }) => {
                assert!(message.contains("response.completed"), "{message}")
            }
            // Cut inside an event: the half event does not decode.
            Some(ProviderError::Decode { excerpt, .. }) => {
                assert!(full.contains(excerpt.trim_end_matches('…')), "{excerpt}")
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn garbage_events_fail_with_an_excerpt() {
    let body = format!(
        "{}event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"delta\":[1,2\n\n",
        event(json!({"type": "response.output_text.delta", "delta": "Hi"}))
    );
    let server = MockServer::start(vec![Reply::sse(body)]).unwrap();
    let (items, error) = run(&server).await;
    assert_eq!(items, vec![StreamItem::Text("Hi".into())]);
    match error {
        Some(ProviderError::Decode { excerpt, .. }) => {
            assert!(excerpt.contains("[1,2"), "{excerpt}")
        }
        other => panic!("{other:?}"),
    }

    // A body that is no event stream at all.
    let server = MockServer::start(vec![Reply::sse(vec![0xff, 0xfe, 0x00, 0x41, 0x7b])]).unwrap();
    let (_, error) = run(&server).await;
    assert!(
        matches!(error, Some(ProviderError::Decode { .. })),
        "{error:?}"
    );

    // An event without a type.
    let server = MockServer::start(vec![Reply::sse("data: {\"delta\":\"x\"}\n\n")]).unwrap();
    let (_, error) = run(&server).await;
    assert!(
        matches!(error, Some(ProviderError::Decode { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn endless_text_deltas_stop_at_the_cap() {
    let piece = event(
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "a".repeat(1000)}),
    );
    let total = 64 * 1024 * 1024;
    let server = MockServer::start(vec![Reply::sse("").endless(piece, total)]).unwrap();
    let (items, error) = run(&server).await;
    assert!(
        matches!(
            error,
            Some(ProviderError::ResponseTooLarge { limit: CAP, .. })
        ),
        "{error:?}"
    );
    let text: usize = items
        .iter()
        .map(|i| match i {
            StreamItem::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert!(text <= CAP);
    assert!(
        server.bytes_sent() < total / 4,
        "reading stopped: {}",
        server.bytes_sent()
    );
}

#[tokio::test]
async fn endless_argument_deltas_and_skipped_events_stop_too() {
    let head = event(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}}),
    );
    let piece = event(
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "\"x\","}),
    );
    let server =
        MockServer::start(vec![Reply::sse(head).endless(piece, 64 * 1024 * 1024)]).unwrap();
    let (_, error) = run(&server).await;
    assert!(
        matches!(error, Some(ProviderError::ResponseTooLarge { .. })),
        "{error:?}"
    );

    // Events the client skips (a built-in tool's progress) hold nothing of the
    // response, yet they are bounded as well.
    let piece = event(
        json!({"type": "response.code_interpreter_call_code.delta", "output_index": 0, "delta": "print(1)\n".repeat(100)}),
    );
    let total = 256 * 1024 * 1024;
    let server = MockServer::start(vec![Reply::sse("").endless(piece, total)]).unwrap();
    let (items, error) = run(&server).await;
    assert!(items.is_empty());
    match error {
        Some(ProviderError::ResponseTooLarge { what, .. }) => {
            assert!(what.contains("skipped"), "{what}")
        }
        other => panic!("{other:?}"),
    }
    assert!(server.bytes_sent() < total / 2, "{}", server.bytes_sent());
}

#[tokio::test]
async fn one_huge_event_or_reasoning_blob_is_refused() {
    // One event larger than any event may be.
    let huge = event(json!({"type": "response.output_text.delta", "delta": "b".repeat(4 * CAP)}));
    let server = MockServer::start(vec![Reply::sse(huge).chunked(8192)]).unwrap();
    let (_, error) = run(&server).await;
    assert!(
        matches!(error, Some(ProviderError::ResponseTooLarge { .. })),
        "{error:?}"
    );

    // An encrypted reasoning blob within one event's bound but past the response cap.
    let blob = event(
        json!({"type": "response.output_item.done", "output_index": 0,
        "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "c".repeat(CAP + 10)}}),
    );
    let server = MockServer::start(vec![Reply::sse(blob)]).unwrap();
    let (items, error) = run(&server).await;
    assert!(items.is_empty(), "nothing past the cap is handed on");
    assert!(
        matches!(
            error,
            Some(ProviderError::ResponseTooLarge { limit: CAP, .. })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_whole_response_past_the_cap_is_refused() {
    let body = json!({"status": "completed", "output": [{"type": "message", "content": [
        {"type": "output_text", "text": "d".repeat(CAP + 1)}]}]});
    let server = MockServer::start(vec![Reply::json(200, body.to_string())]).unwrap();
    let error = provider(&server)
        .complete(
            &ProviderRequest::new("gpt-5", vec![Message::user("hi")]),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { .. }),
        "{error:?}"
    );
}
