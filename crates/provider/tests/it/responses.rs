//! Every recorded Responses API stream and body (OpenAI's and LM Studio's), served over
//! a real local HTTP server and parsed by the real client.

use futures::StreamExt;
use oxydra_provider::{
    OpenAiResponsesProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
    ProviderResponse, StreamAccumulator, is_retryable,
};
use oxydra_test_support::{MockServer, Reply, fixture, fixture_text};
use oxydra_types::{FinishReason, Message, ReasoningPart, StreamItem, Usage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn provider(url: String) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(ProviderConfig::new(url, Some("sk-test".into())))
}

fn request() -> ProviderRequest {
    ProviderRequest::new("gpt-5", vec![Message::user("hi")])
}

/// Streams fixture `name`, served whole and in 7- and 64-byte pieces; all must give
/// the same items. Returns the assembled response and the items.
async fn stream_fixture(name: &str) -> (ProviderResponse, Vec<StreamItem>) {
    let mut results = Vec::new();
    for chunk in [0, 7, 64] {
        let server = MockServer::repeating(vec![Reply::sse(fixture(name)).chunked(chunk)]).unwrap();
        let provider = provider(server.openai_url());
        let mut stream = provider
            .stream(&request(), &CancellationToken::new())
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
        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/responses");
        assert_eq!(sent.body["store"], false);
        results.push(items);
    }
    assert_eq!(results[0], results[1], "{name}: chunking changed the items");
    assert_eq!(results[0], results[2], "{name}: chunking changed the items");
    let items = results.swap_remove(0);
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    (acc.finish().unwrap(), items)
}

async fn complete_fixture(name: &str) -> ProviderResponse {
    let server = MockServer::start(vec![Reply::json(200, fixture(name))]).unwrap();
    provider(server.openai_url())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn calls(response: &ProviderResponse) -> Vec<(&str, &str, &str)> {
    response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect()
}

/// The reasoning items of a recorded stream, read straight from its
/// `output_item.done` events: what the client must keep, unchanged.
fn recorded_reasoning(name: &str) -> Vec<ReasoningPart> {
    fixture_text(name)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| event["type"] == "response.output_item.done")
        .map(|event| event["item"].clone())
        .filter(|item| item["type"] == "reasoning")
        .map(|item| ReasoningPart::Reasoning {
            id: item["id"].as_str().unwrap().to_owned(),
            summary: item["summary"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| part["text"].as_str().unwrap().to_owned())
                .collect(),
            encrypted_content: item["encrypted_content"].as_str().map(str::to_owned),
        })
        .collect()
}

/// The text of a recorded stream's message items.
fn recorded_text(name: &str) -> String {
    fixture_text(name)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|event| {
            event["type"] == "response.output_item.done" && event["item"]["type"] == "message"
        })
        .flat_map(|event| {
            event["item"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

fn reasoning_deltas(items: &[StreamItem]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            StreamItem::Reasoning(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn gpt4o_parallel_function_calls_from_argument_deltas() {
    let (response, items) =
        stream_fixture("openai-responses/gpt4o_parallel_function_calls.sse").await;
    assert_eq!(
        calls(&response),
        vec![
            (
                "call_sKC7OABqf2A2PTLCm0CLeRWV",
                "secret_retrieval_tool",
                r#"{"password":"mellon"}"#
            ),
            (
                "call_OdR3s3xop0vtgkDyWRMLafuH",
                "secret_retrieval_tool",
                r#"{"password":"radiance"}"#
            ),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::new(36, 54, 0));
    assert_eq!(response.message.content, None);
    // The arguments came as deltas: more argument fragments than calls.
    let fragments = items
        .iter()
        .filter(|item| matches!(item, StreamItem::ToolCallDelta(d) if !d.arguments.is_empty()))
        .count();
    assert!(fragments > 2, "{fragments}");
}

#[tokio::test]
async fn gpt5_reasoning_item_is_kept_with_its_encrypted_content() {
    let name = "openai-responses/gpt5_reasoning_function_call.sse";
    let (response, items) = stream_fixture(name).await;
    let recorded = recorded_reasoning(name);
    assert_eq!(recorded.len(), 1);
    assert!(
        matches!(&recorded[0], ReasoningPart::Reasoning { encrypted_content: Some(e), .. } if e.len() > 1000)
    );
    assert_eq!(response.message.reasoning, recorded);
    assert_eq!(
        calls(&response),
        vec![(
            "call_CWXgs68YprAjp6t0371hiPOI",
            "final_result",
            r#"{"result":6666}"#
        )]
    );
    assert_eq!(
        response.usage,
        Usage::new(53, 469, 0).with_reasoning_tokens(448)
    );
    // The part comes before the call it led to.
    let part_at = items
        .iter()
        .position(|i| matches!(i, StreamItem::ReasoningPart(_)))
        .unwrap();
    let call_at = items
        .iter()
        .position(|i| matches!(i, StreamItem::ToolCallDelta(_)))
        .unwrap();
    assert!(part_at < call_at);
}

#[tokio::test]
async fn gpt55_reasoning_commentary_message_then_call_with_cache_write_usage() {
    let name = "openai-responses/gpt55_reasoning_message_function_call.sse";
    let (response, _) = stream_fixture(name).await;
    assert_eq!(response.message.reasoning, recorded_reasoning(name));
    assert_eq!(
        response.message.text(),
        "I’ll check the capital lookup tool for “PotatoLand.”"
    );
    assert_eq!(
        calls(&response),
        vec![(
            "call_LabG58Uhrq9kZvR52BYKjToD",
            "get_capital",
            r#"{"country":"PotatoLand"}"#
        )]
    );
    assert_eq!(
        response.usage,
        Usage::new(63, 69, 0).with_reasoning_tokens(26)
    );
}

#[tokio::test]
async fn o3mini_four_summary_parts_stream_as_reasoning() {
    let name = "openai-responses/o3mini_reasoning_summary.sse";
    let (response, items) = stream_fixture(name).await;
    let recorded = recorded_reasoning(name);
    assert_eq!(response.message.reasoning, recorded);
    let ReasoningPart::Reasoning { summary, .. } = &recorded[0] else {
        panic!()
    };
    assert_eq!(summary.len(), 4);
    // The streamed reasoning is the four summaries, a blank line apart.
    assert_eq!(reasoning_deltas(&items), summary.join("\n\n"));
    assert_eq!(
        response.reasoning.as_deref(),
        Some(summary.join("\n\n").as_str())
    );
    assert!(
        response
            .message
            .text()
            .starts_with("I'm not a road safety professional")
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(
        response.usage,
        Usage::new(13, 1680, 0).with_reasoning_tokens(1408)
    );
}

#[tokio::test]
async fn gpt5_code_interpreter_items_are_skipped_and_cached_tokens_counted() {
    let name = "openai-responses/gpt5_reasoning_summary_code_interpreter_cached.sse";
    let (response, items) = stream_fixture(name).await;
    assert_eq!(response.message.reasoning, recorded_reasoning(name));
    assert!(
        response.message.tool_calls.is_empty(),
        "built-in tool calls are not ours"
    );
    assert!(response.message.text().starts_with("123456^123 equals:\n"));
    assert_eq!(response.message.text(), recorded_text(name));
    assert!(!reasoning_deltas(&items).is_empty());
    assert_eq!(
        response.usage,
        Usage::new(3727, 347, 3200).with_reasoning_tokens(128)
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn gpt4o_text_with_cached_tokens() {
    let (response, _) = stream_fixture("openai-responses/gpt4o_text_cached_tokens.sse").await;
    assert_eq!(response.message.text(), "2, 3, 4");
    assert_eq!(response.usage, Usage::new(1515, 8, 1390));
    assert!(response.message.reasoning.is_empty());
}

#[tokio::test]
async fn lmstudio_reasoning_text_and_a_done_only_function_call() {
    let name = "local/lmstudio_glm47_responses_reasoning_tool_call.sse";
    let (response, items) = stream_fixture(name).await;
    assert!(
        reasoning_deltas(&items)
            .starts_with("The user is asking for the weather in San Francisco.")
    );
    assert_eq!(
        response.message.text(),
        "I'll get the current weather information for San Francisco for you."
    );
    assert_eq!(
        calls(&response),
        vec![(
            "call_2025306790300011",
            "weather",
            r#"{"location":"San Francisco"}"#
        )]
    );
    // No encryption at LM Studio: the item is kept without it.
    assert_eq!(
        response.message.reasoning,
        vec![ReasoningPart::Reasoning {
            id: "rs_3yo6zy4vu4hq6iegqwhn1".into(),
            summary: vec![],
            encrypted_content: None,
        }]
    );
    assert_eq!(
        response.usage,
        Usage::new(182, 61, 2).with_reasoning_tokens(48)
    );
}

#[tokio::test]
async fn a_mid_stream_insufficient_quota_error_is_clear_and_not_retried() {
    let server = MockServer::start(vec![Reply::sse(fixture(
        "openai-responses/gpt5nano_stream_error_insufficient_quota.sse",
    ))])
    .unwrap();
    let mut stream = provider(server.openai_url())
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let error = loop {
        match stream.next().await {
            Some(Ok(_)) => {}
            Some(Err(error)) => break error,
            None => panic!("the stream ended without its error"),
        }
    };
    assert!(stream.next().await.is_none());
    assert!(
        matches!(error, ProviderError::InvalidRequest { .. }),
        "{error:?}"
    );
    assert!(!is_retryable(&error));
    let text = error.to_string();
    assert!(text.contains("insufficient_quota"), "{text}");
    assert!(text.contains("You exceeded your current quota"), "{text}");
}

#[tokio::test]
async fn whole_responses_parse() {
    let response = complete_fixture("openai-responses/gpt4o_parallel_function_calls.json").await;
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert!(
        response
            .message
            .tool_calls
            .iter()
            .all(|c| c.name == "secret_retrieval_tool" && c.id.as_str().starts_with("call_"))
    );

    let name = "openai-responses/gpt55_reasoning_encrypted_function_call.json";
    let response = complete_fixture(name).await;
    let body: Value = serde_json::from_slice(&fixture(name)).unwrap();
    let item = &body["output"][0];
    assert_eq!(
        response.message.reasoning,
        vec![ReasoningPart::Reasoning {
            id: item["id"].as_str().unwrap().into(),
            summary: vec![],
            encrypted_content: item["encrypted_content"].as_str().map(str::to_owned),
        }]
    );
    assert_eq!(
        calls(&response),
        vec![(
            "call_uy7tfNVokIN7NjFF6k7OtLyl",
            "lookup_population",
            r#"{"country":"Pundora"}"#
        )]
    );
    assert_eq!(
        response.usage,
        Usage::new(94, 85, 0).with_reasoning_tokens(63)
    );

    let response =
        complete_fixture("openai-responses/gpt41_function_call_cached_tokens.json").await;
    assert_eq!(
        calls(&response),
        vec![(
            "call_LJAGuYYZPjNxSgg0TUgGpT44",
            "get_weather",
            r#"{"location":"Paris"}"#
        )]
    );
    assert_eq!(response.usage, Usage::new(1185, 15, 1152));
}
