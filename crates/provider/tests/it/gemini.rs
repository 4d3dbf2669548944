//! The Gemini client against a real local HTTP server replaying recorded streams.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use oxydra_provider::{
    GeminiProvider, Provider, ProviderConfig, ProviderError, ProviderRequest, ProviderResponse,
    ReliableProvider, RetryPolicy, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, fixture, fixture_text};
use oxydra_types::{CallId, FinishReason, Message, ReasoningPart, StreamItem, Usage};
use tokio_util::sync::CancellationToken;

fn gemini(url: String) -> GeminiProvider {
    GeminiProvider::new(ProviderConfig::new(url, Some("AIza-test".into())))
}

fn request(model: &str) -> ProviderRequest {
    ProviderRequest::new(model, vec![Message::user("hi")])
}

/// The items with every call id replaced by its position, to compare runs.
fn normalised(items: &[StreamItem]) -> Vec<StreamItem> {
    let mut ids: Vec<CallId> = Vec::new();
    let mut position = |id: &CallId| {
        let n = ids.iter().position(|known| known == id).unwrap_or_else(|| {
            ids.push(id.clone());
            ids.len() - 1
        });
        CallId::from(format!("#{n}"))
    };
    items
        .iter()
        .map(|item| match item {
            StreamItem::ToolCallDelta(delta) => {
                let mut delta = delta.clone();
                delta.id = delta.id.as_ref().map(&mut position);
                StreamItem::ToolCallDelta(delta)
            }
            StreamItem::ReasoningPart(ReasoningPart::ThoughtSignature { call_id, signature }) => {
                StreamItem::ReasoningPart(ReasoningPart::ThoughtSignature {
                    call_id: call_id.as_ref().map(&mut position),
                    signature: signature.clone(),
                })
            }
            other => other.clone(),
        })
        .collect()
}

async fn collect(
    provider: &dyn Provider,
    request: &ProviderRequest,
) -> Result<Vec<StreamItem>, ProviderError> {
    let mut stream = provider.stream(request, &CancellationToken::new()).await?;
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item?);
    }
    Ok(items)
}

/// Streams fixture `name` served whole and in 7- and 64-byte pieces; all must give the
/// same items (ids aside). Returns the assembled response and the items.
async fn stream_fixture(name: &str) -> (ProviderResponse, Vec<StreamItem>) {
    let mut runs = Vec::new();
    for chunk in [0, 7, 64] {
        let server = MockServer::start(vec![Reply::sse(fixture(name)).chunked(chunk)]).unwrap();
        let items = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
            .await
            .unwrap_or_else(|e| panic!("{name} (chunk {chunk}): {e}"));
        assert!(
            matches!(items.last(), Some(StreamItem::Finish(_))),
            "{name}: finish last"
        );
        runs.push(items);
    }
    assert_eq!(
        normalised(&runs[0]),
        normalised(&runs[1]),
        "{name}: chunking changed the items"
    );
    assert_eq!(
        normalised(&runs[0]),
        normalised(&runs[2]),
        "{name}: chunking changed the items"
    );
    let items = runs.swap_remove(0);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    (acc.finish().unwrap(), items)
}

fn calls(response: &ProviderResponse) -> Vec<(&str, &str)> {
    response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.arguments.as_str()))
        .collect()
}

fn signatures(response: &ProviderResponse) -> Vec<(Option<CallId>, String)> {
    response
        .message
        .reasoning
        .iter()
        .filter_map(|part| match part {
            ReasoningPart::ThoughtSignature { call_id, signature } => {
                Some((call_id.clone(), signature.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn parallel_calls_with_a_signature_on_the_first() {
    let (response, _) =
        stream_fixture("gemini/gemini25_flash_parallel_function_calls_stream.sse").await;
    assert_eq!(
        calls(&response),
        vec![
            ("secret_retrieval_tool", r#"{"password":"mellon"}"#),
            ("secret_retrieval_tool", r#"{"password":"radiance"}"#),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage::new(70, 40 + 61, 0).with_reasoning_tokens(61)
    );
    let first = response.message.tool_calls[0].id.clone();
    let signatures = signatures(&response);
    assert_eq!(signatures.len(), 1);
    assert_eq!(signatures[0].0, Some(first));
    assert!(signatures[0].1.starts_with("CikB0e2Kbw5tJ9dwYB9m"));
    let ids: HashSet<&str> = response
        .message
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "ids are unique");
    assert!(
        ids.iter().all(|id| id.len() > 8),
        "ids are not bare indexes: {ids:?}"
    );
}

#[tokio::test]
async fn ids_are_never_reused_from_turn_to_turn() {
    let mut seen = HashSet::new();
    for _ in 0..3 {
        let (response, _) =
            stream_fixture("gemini/gemini25_flash_parallel_function_calls_stream.sse").await;
        for call in &response.message.tool_calls {
            assert!(seen.insert(call.id.clone()), "id {} came twice", call.id);
        }
    }
}

#[tokio::test]
async fn gemini3_call_without_arguments_and_a_trailing_empty_chunk() {
    let (response, items) =
        stream_fixture("gemini/gemini3_pro_function_call_thought_signature_stream.sse").await;
    assert_eq!(calls(&response), vec![("get_country", "{}")]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage::new(29, 212, 0).with_reasoning_tokens(202)
    );
    assert_eq!(
        response.message.content, None,
        "the empty text part adds no text"
    );
    assert_eq!(
        signatures(&response)[0].0.as_ref(),
        Some(&response.message.tool_calls[0].id)
    );
    assert!(!items.iter().any(|i| matches!(i, StreamItem::Text(_))));
}

#[tokio::test]
async fn usage_comes_from_the_last_chunk() {
    let (response, _) =
        stream_fixture("gemini/gemini3_pro_text_after_tool_result_stream.sse").await;
    assert_eq!(
        response.message.text(),
        "The capital of Mexico is Mexico City."
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(257, 8, 0));
}

#[tokio::test]
async fn gemini2_single_chunk_call_has_no_signature() {
    let (response, _) = stream_fixture("gemini/gemini2_flash_function_call_stream.sse").await;
    assert_eq!(
        calls(&response),
        vec![("get_capital", r#"{"country":"France"}"#)]
    );
    assert_eq!(response.usage, Usage::new(52, 5, 0));
    assert!(response.message.reasoning.is_empty());
}

#[tokio::test]
async fn thought_summaries_are_reasoning_and_the_text_keeps_its_signature() {
    let (response, items) = stream_fixture("gemini/gemini25_pro_thought_summary_stream.sse").await;
    let reasoning = response.reasoning.clone().unwrap();
    assert!(reasoning.starts_with("**Clarifying User Goals**"));
    assert!(reasoning.contains("**Crafting Safe Instructions**"));
    assert!(!response.message.text().contains("Clarifying User Goals"));
    assert!(
        response
            .message
            .text()
            .ends_with("Always assume a driver might not see you.")
    );
    let signatures = signatures(&response);
    assert_eq!(signatures.len(), 1);
    assert_eq!(signatures[0].0, None);
    assert!(signatures[0].1.starts_with("CiIB0e2Kb6Syj1a961Ef"));
    assert_eq!(
        response.usage,
        Usage::new(34, 469 + 787, 0).with_reasoning_tokens(787)
    );
    let summaries = items
        .iter()
        .filter(|i| matches!(i, StreamItem::Reasoning(_)))
        .count();
    assert_eq!(summaries, 4);
}

#[tokio::test]
async fn a_whole_response_from_generate_content() {
    let server = MockServer::start(vec![Reply::json(
        200,
        fixture("gemini/gemini25_flash_parallel_function_calls.json"),
    )])
    .unwrap();
    let response = gemini(server.url(""))
        .complete(&request("gemini-2.5-flash"), &CancellationToken::new())
        .await
        .unwrap();
    let names: Vec<&str> = calls(&response).iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        vec![
            "parallel_local_search_one",
            "parallel_local_search_two",
            "parallel_local_search_three"
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage::new(327, 70 + 139, 0).with_reasoning_tokens(139)
    );
    let signatures = signatures(&response);
    assert_eq!(signatures.len(), 1);
    assert_eq!(
        signatures[0].0.as_ref(),
        Some(&response.message.tool_calls[0].id)
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(sent.query, None);
}

#[tokio::test]
async fn the_request_names_model_key_and_sse() {
    let server = MockServer::start(vec![Reply::sse(fixture(
        "gemini/gemini3_pro_text_after_tool_result_stream.sse",
    ))])
    .unwrap();
    let mut request = request("gemini-3-pro-preview");
    request.messages.insert(0, Message::system("be brief"));
    collect(&gemini(server.url("")), &request).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent"
    );
    assert_eq!(sent.query.as_deref(), Some("alt=sse"));
    assert_eq!(sent.header("x-goog-api-key"), Some("AIza-test"));
    assert_eq!(sent.authorization(), None);
    assert_eq!(
        sent.body["systemInstruction"]["parts"][0]["text"],
        "be brief"
    );
    assert_eq!(
        sent.body["contents"][0],
        serde_json::json!({"role": "user", "parts": [{"text": "hi"}]})
    );
    assert_eq!(
        sent.body["generationConfig"]["thinkingConfig"]["includeThoughts"],
        true
    );
}

#[tokio::test]
async fn the_thinking_budget_is_sent() {
    let server = MockServer::start(vec![Reply::sse(fixture(
        "gemini/gemini3_pro_text_after_tool_result_stream.sse",
    ))])
    .unwrap();
    let provider = GeminiProvider::new(
        ProviderConfig::new(server.url(""), Some("k".into())).with_thinking_budget(1024),
    );
    collect(&provider, &request("gemini-2.5-pro"))
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].body["generationConfig"]["thinkingConfig"],
        serde_json::json!({"includeThoughts": true, "thinkingBudget": 1024})
    );
}

#[tokio::test]
async fn resource_exhausted_is_retried() {
    let body = fixture("gemini/gemini_429_resource_exhausted.json");
    let server = MockServer::start(vec![
        Reply::json(429, body.clone()).header("content-type", "application/json; charset=UTF-8"),
        Reply::json(
            429,
            r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.05s"}]}}"#,
        ),
        Reply::sse(fixture("gemini/gemini3_pro_text_after_tool_result_stream.sse")),
    ])
    .unwrap();
    let provider = ReliableProvider::new(
        Arc::new(gemini(server.url(""))),
        RetryPolicy::default().with_base_delay(Duration::from_millis(10)),
    );
    let items = collect(&provider, &request("gemini-2.5-flash"))
        .await
        .unwrap();
    assert!(matches!(
        items.last(),
        Some(StreamItem::Finish(FinishReason::Stop))
    ));
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn rate_limit_error_keeps_the_message_and_the_retry_info() {
    let server = MockServer::start(vec![Reply::json(
        429,
        r#"{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#,
    )])
    .unwrap();
    let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::RateLimited { retry_after: Some(d), message }
            if *d == Duration::from_secs(7) && message == "You exceeded your current quota."),
        "{error:?}"
    );
}

#[tokio::test]
async fn invalid_argument_keeps_the_whole_message() {
    let message = format!(
        "Invalid JSON payload received. {}",
        "Unknown name \"x\": Cannot find field. ".repeat(30)
    );
    let body = serde_json::json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}});
    let server = MockServer::start(vec![Reply::json(400, body.to_string())]).unwrap();
    let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    match error {
        ProviderError::InvalidRequest { message: got } => {
            assert_eq!(got, format!("HTTP 400: {message}"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_finish_reason_fails() {
    let whole = fixture_text("gemini/gemini3_pro_text_after_tool_result_stream.sse");
    let cut = whole.rsplit_once("data: ").unwrap().0.to_owned();
    let server = MockServer::start(vec![Reply::sse(cut.clone())]).unwrap();
    let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::Transport { message } if message.contains("finishReason")),
        "{error:?}"
    );
    // Cut in the middle of an event's JSON: an undecodable event.
    let server = MockServer::start(vec![Reply::sse(whole[..whole.len() - 40].to_owned())]).unwrap();
    let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::Decode { .. }), "{error:?}");
}

#[tokio::test]
async fn garbage_and_empty_bodies_are_decode_errors() {
    for body in [
        "data: <html>oops</html>\r\n\r\n",
        "data: [1,2]\r\n\r\n",
        "",
        "<html></html>",
    ] {
        let server = MockServer::start(vec![Reply::sse(body)]).unwrap();
        let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ProviderError::Decode { .. }),
            "{body:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_huge_chunk_stops_at_the_cap() {
    let text = "x".repeat(64 * 1024);
    let chunk = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}]}},\"finishReason\":\"STOP\"}}]}}\r\n\r\n"
    );
    let server = MockServer::start(vec![Reply::sse(chunk.clone())]).unwrap();
    let provider = GeminiProvider::new(
        ProviderConfig::new(server.url(""), None).with_max_response_bytes(16 * 1024),
    );
    let error = collect(&provider, &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { .. }),
        "{error:?}"
    );
    // An event that never ends is cut at the event cap, not read for ever.
    let server = MockServer::start(vec![
        Reply::sse("data: {\"candidates\":[").endless("x", 4 << 20),
    ])
    .unwrap();
    let provider = GeminiProvider::new(
        ProviderConfig::new(server.url(""), None).with_max_response_bytes(16 * 1024),
    );
    let error = collect(&provider, &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { what, .. } if what.contains("server-sent event")),
        "{error:?}"
    );
}

#[tokio::test]
async fn thousands_of_calls_in_one_chunk_are_refused() {
    let part = r#"{"functionCall":{"name":"f","args":{}}}"#;
    let parts = vec![part; 2000].join(",");
    let chunk = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{parts}]}},\"finishReason\":\"STOP\"}}]}}\r\n\r\n"
    );
    let server = MockServer::start(vec![Reply::sse(chunk)]).unwrap();
    let error = collect(&gemini(server.url("")), &request("gemini-2.5-flash"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { what, .. } if what.contains("tool calls")),
        "{error:?}"
    );
}
