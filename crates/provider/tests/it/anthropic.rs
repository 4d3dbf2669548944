//! The Anthropic client against recordings of extended thinking, prompt caching and a
//! rate limit, served by a mock as strict as the real API.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use oxydra_provider::{
    AnthropicProvider, Provider, ProviderConfig, ProviderError, ProviderRequest, ProviderResponse,
    ReliableProvider, RetryPolicy, StreamAccumulator,
};
use oxydra_test_support::{MockServer, Reply, anthropic, fixture, fixture_text};
use oxydra_types::{CallId, FinishReason, Message, ReasoningPart, StreamItem, ToolSchema, Usage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const HAIKU_THINKING: &str = "anthropic/haiku45_thinking_then_tool_use.sse";

fn strict(replies: Vec<Reply>) -> MockServer {
    MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(replies)
        .start()
        .unwrap()
}

fn client(server: &MockServer, budget: Option<u32>) -> AnthropicProvider {
    let mut config = ProviderConfig::new(server.url(""), Some("sk-ant".into()));
    config.thinking_budget = budget;
    AnthropicProvider::new(config)
}

fn tool(name: &str) -> ToolSchema {
    ToolSchema::new(name, "a tool", json!({"type": "object", "properties": {}}))
}

async fn stream(
    provider: &AnthropicProvider,
    request: &ProviderRequest,
) -> Result<(ProviderResponse, Vec<StreamItem>), ProviderError> {
    let mut stream = provider.stream(request, &CancellationToken::new()).await?;
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item?);
    }
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    Ok((acc.finish()?, items))
}

/// Streams the fixture `name` (whole and in 5-byte pieces, which must agree) to a
/// one-message request.
async fn stream_fixture(name: &str) -> (ProviderResponse, Vec<StreamItem>) {
    let mut results = Vec::new();
    for chunk in [0, 5] {
        let server = strict(vec![Reply::sse(fixture(name)).chunked(chunk)]);
        let request = ProviderRequest::new("claude", vec![Message::user("hi")]);
        results.push(stream(&client(&server, None), &request).await.unwrap());
    }
    assert_eq!(
        results[0].1, results[1].1,
        "{name}: chunking changed the items"
    );
    results.swap_remove(0)
}

fn reasoning_text(items: &[StreamItem]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            StreamItem::Reasoning(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn haiku_thinking_then_a_no_argument_tool_call() {
    let (response, items) = stream_fixture(HAIKU_THINKING).await;
    let [ReasoningPart::Thinking { text, signature }] = response.message.reasoning.as_slice()
    else {
        panic!("{:?}", response.message.reasoning);
    };
    assert!(text.starts_with("The user wants me to:\n1. Use the fixed_version tool\n2."));
    assert!(text.ends_with("to see what version it returns."));
    assert!(signature.starts_with("EoQDCm0IDhgCKkCDzGs2kL2Pgn"));
    assert!(signature.ends_with("hhANWRjSBwUxgB"));
    assert_eq!(reasoning_text(&items), *text);
    assert_eq!(response.reasoning.as_deref(), Some(text.as_str()));
    // The part comes before the tool call, as the block did.
    let part_at = items
        .iter()
        .position(|i| matches!(i, StreamItem::ReasoningPart(_)))
        .unwrap();
    let call_at = items
        .iter()
        .position(|i| matches!(i, StreamItem::ToolCallDelta(_)))
        .unwrap();
    assert!(part_at < call_at);
    assert_eq!(response.message.tool_calls.len(), 1);
    assert_eq!(response.message.tool_calls[0].name, "fixed_version");
    assert_eq!(response.message.tool_calls[0].arguments, "");
    assert_eq!(response.message.content, None);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage::new(598, 92, 0).with_reasoning_tokens(53)
    );
}

#[tokio::test]
async fn sonnet_thinking_text_and_a_split_tool_call() {
    let (response, _) =
        stream_fixture("anthropic/sonnet46_thinking_text_tool_use_scrubbed.sse").await;
    assert_eq!(
        response.message.reasoning,
        vec![ReasoningPart::Thinking {
            text: "The user wants to know the current weather in Tokyo, Japan. I'll call the \
                   get_weather tool with \"Tokyo\" as the city."
                .into(),
            signature: "signature_REDACTED_2".into(),
        }]
    );
    assert_eq!(
        response.message.text(),
        "Sure! Let me check the current weather in Tokyo right away!"
    );
    assert_eq!(
        response.message.tool_calls[0].arguments,
        r#"{"city": "Tokyo, Japan"}"#
    );
    assert_eq!(
        response.usage,
        Usage::new(671, 113, 0).with_reasoning_tokens(41)
    );
}

#[tokio::test]
async fn redacted_thinking_blocks_are_kept_whole() {
    let (response, items) = stream_fixture("anthropic/sonnet45_redacted_thinking.sse").await;
    let data: Vec<&str> = response
        .message
        .reasoning
        .iter()
        .map(|part| match part {
            ReasoningPart::RedactedThinking { data } => data.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(data.len(), 2);
    assert!(data[0].starts_with("EqkECkYIBxgCKkA8AZ4n"));
    assert!(data[1].starts_with("EtgBCkYIBxgCKkDQfGkw"));
    assert_eq!(reasoning_text(&items), "", "nothing readable to show");
    assert_eq!(response.reasoning, None);
    assert!(
        response
            .message
            .text()
            .starts_with("I notice that you've sent what")
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage, Usage::new(92, 189, 0));
}

#[tokio::test]
async fn cache_usage_in_both_stream_shapes() {
    // Older shape: message_delta carries only output_tokens.
    let (response, _) = stream_fixture("anthropic/sonnet4_cache_creation_stream.sse").await;
    assert_eq!(
        response.usage,
        Usage::new(18 + 1031, 100, 0).with_cache_write_tokens(1031)
    );
    assert_eq!(response.usage.uncached_input_tokens(), 18);
    assert_eq!(response.finish_reason, FinishReason::Length);
    // Newer shape: message_delta repeats the input and cache counts.
    let (response, _) = stream_fixture("anthropic/sonnet45_cache_read_stream.sse").await;
    assert_eq!(response.usage, Usage::new(3 + 1217, 6, 1217));
    assert_eq!(response.usage.uncached_input_tokens(), 3);
}

#[tokio::test]
async fn whole_response_with_cache_reads_and_writes() {
    let server = strict(vec![Reply::json(
        200,
        fixture("anthropic/sonnet4_cache_creation_and_read.json"),
    )]);
    let request = ProviderRequest::new("claude-sonnet-4-0", vec![Message::user("hi")]);
    let response = client(&server, None)
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        response.usage,
        Usage::new(3 + 598 + 4597, 350, 4597).with_cache_write_tokens(598)
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(!response.message.text().is_empty());
}

/// Turn 1 of a thinking tool loop, then turn 2 carrying turn 1's message back.
fn second_turn(first: &ProviderResponse) -> ProviderRequest {
    let call = &first.message.tool_calls[0];
    let mut request = ProviderRequest::new(
        "claude-haiku-4-5",
        vec![
            Message::system("Be brief."),
            Message::user("What version? Then a joke."),
            first.message.clone(),
            Message::tool_result(call.id.clone(), call.name.clone(), "1.2.3"),
        ],
    );
    request.tools = vec![tool("fixed_version")];
    request
}

#[tokio::test]
async fn thinking_goes_back_byte_identical_before_the_tool_use() {
    let server = strict(vec![
        Reply::sse(fixture(HAIKU_THINKING)),
        anthropic::text("Version 1.2.3. It is fixed, unlike my jokes."),
    ]);
    let provider = client(&server, Some(2_048));
    let mut first = ProviderRequest::new(
        "claude-haiku-4-5",
        vec![
            Message::system("Be brief."),
            Message::user("What version? Then a joke."),
        ],
    );
    first.tools = vec![tool("fixed_version")];
    let (turn1, _) = stream(&provider, &first).await.unwrap();
    let (turn2, _) = stream(&provider, &second_turn(&turn1)).await.unwrap();
    assert!(turn2.message.text().starts_with("Version 1.2.3."));

    let requests = server.requests();
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let assistant = &requests[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][1]["type"], "tool_use");
    // Byte-identical: the recorded signature and thinking text appear verbatim in the
    // raw request body, JSON-escaped exactly as the recording escaped them.
    let recorded = fixture_text(HAIKU_THINKING);
    let signature = recorded
        .split(r#""signature":""#)
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|sig| !sig.is_empty())
        .unwrap();
    let raw = String::from_utf8(requests[1].raw_body.clone()).unwrap();
    assert!(
        raw.contains(&format!(r#""signature":"{signature}""#)),
        "{signature}\n{raw}"
    );
    assert!(raw.contains(r#"The user wants me to:\n1. Use the fixed_version tool\n2. Tell"#));
}

#[tokio::test]
async fn the_strict_mock_refuses_a_dropped_or_altered_thinking_block() {
    for tamper in ["drop", "alter"] {
        let server = strict(vec![
            Reply::sse(fixture(HAIKU_THINKING)),
            anthropic::text("unreachable"),
        ]);
        let provider = client(&server, Some(2_048));
        let mut first = ProviderRequest::new("claude-haiku-4-5", vec![Message::user("go")]);
        first.tools = vec![tool("fixed_version")];
        let (mut turn1, _) = stream(&provider, &first).await.unwrap();
        match tamper {
            "drop" => turn1.message.reasoning.clear(),
            _ => {
                if let Some(ReasoningPart::Thinking { text, .. }) =
                    turn1.message.reasoning.first_mut()
                {
                    text.push(' ');
                }
            }
        }
        let error = stream(&provider, &second_turn(&turn1)).await.unwrap_err();
        let ProviderError::InvalidRequest { message } = &error else {
            panic!("{tamper}: {error:?}");
        };
        assert!(message.contains("HTTP 400"), "{message}");
        assert!(
            message.contains("thinking") || message.contains("signature"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_budget_the_api_refuses_fails_before_sending() {
    let server = strict(vec![anthropic::text("never")]);
    let request = ProviderRequest::new("claude", vec![Message::user("hi")]);
    let error = stream(&client(&server, Some(1_000)), &request)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::InvalidConfig { message, .. } if message.contains("1024")),
        "{error:?}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_rate_limit_follows_x_should_retry() {
    let limited = || {
        Reply::json(429, fixture("anthropic/rate_limit_429.json")).header("x-should-retry", "true")
    };
    let policy = RetryPolicy::default()
        .with_base_delay(Duration::from_millis(1))
        .with_max_attempts(3);
    let request = ProviderRequest::new("claude", vec![Message::user("hi")]);

    // `true`: retried, and the next answer is taken.
    let server = strict(vec![limited(), anthropic::text("after the wait")]);
    let reliable = ReliableProvider::new(Arc::new(client(&server, None)), policy.clone());
    let response = reliable.complete(&request, &CancellationToken::new()).await;
    assert_eq!(server.hits(), 2);
    drop(response);

    // `false`: the same 429 is final, and its message is kept whole.
    let server = MockServer::repeating(vec![
        Reply::json(429, fixture("anthropic/rate_limit_429.json"))
            .header("x-should-retry", "false"),
    ])
    .unwrap();
    let reliable = ReliableProvider::new(Arc::new(client(&server, None)), policy);
    let error = reliable
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(server.hits(), 1);
    assert!(!oxydra_provider::is_retryable(&error));
    let text = error.to_string();
    assert!(text.starts_with("rate limited"), "{text}");
    assert!(text.contains("20,000,000 prompt bytes per hour"), "{text}");
}

#[tokio::test]
async fn three_turns_move_the_cache_breakpoint_and_keep_the_prefix() {
    let server = strict(vec![
        anthropic::tool_uses(&[("toolu_1", "lookup", r#"{"q":"a"}"#)]),
        anthropic::tool_uses(&[("toolu_2", "lookup", r#"{"q":"b"}"#)]),
        anthropic::text("done"),
    ]);
    let provider = client(&server, None);
    let mut messages = vec![Message::system("You look things up."), Message::user("go")];
    for turn in 0..3 {
        let mut request = ProviderRequest::new("claude-sonnet-4-5", messages.clone());
        request.tools = vec![tool("search"), tool("lookup")];
        let (response, _) = stream(&provider, &request).await.unwrap();
        messages.push(response.message.clone());
        if let Some(call) = response.message.tool_calls.first() {
            messages.push(Message::tool_result(
                CallId::from(call.id.as_str()),
                "lookup",
                format!("result {turn}"),
            ));
        }
    }
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    let mut previous: Option<serde_json::Value> = None;
    for body in &bodies {
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let messages = body["messages"].as_array().unwrap();
        let newest = messages.last().unwrap()["content"].as_array().unwrap();
        assert_eq!(
            newest.last().unwrap()["cache_control"],
            json!({"type": "ephemeral"})
        );
        let marked = serde_json::to_string(body)
            .unwrap()
            .matches("cache_control")
            .count();
        assert_eq!(marked, 3, "three breakpoints, within the API's four");
        // The cache key is the content: without the markers, this request starts with
        // the whole previous one.
        let mut plain = body.clone();
        strip_cache_control(&mut plain);
        if let Some(before) = &previous {
            assert_eq!(plain["tools"], before["tools"]);
            assert_eq!(plain["system"], before["system"]);
            let now = plain["messages"].as_array().unwrap();
            let then = before["messages"].as_array().unwrap();
            assert!(now.len() > then.len());
            assert_eq!(&now[..then.len()], then.as_slice());
        }
        previous = Some(plain);
    }
}

fn strip_cache_control(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[tokio::test]
async fn a_cut_thinking_stream_is_an_error_not_a_half_message() {
    let recorded = fixture(HAIKU_THINKING);
    let cut = recorded.len() / 2;
    let server = MockServer::repeating(vec![Reply::sse(recorded[..cut].to_vec())]).unwrap();
    let request = ProviderRequest::new("claude", vec![Message::user("hi")]);
    let error = stream(&client(&server, None), &request).await.unwrap_err();
    assert!(
        matches!(
            error,
            ProviderError::Decode { .. } | ProviderError::Transport { .. }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_huge_thinking_stream_is_capped() {
    let start = r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#;
    let delta = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"thinking_delta\",\"thinking\":\"{}\"}}}}\n\n",
        "x".repeat(1024)
    );
    let head = format!("event: content_block_start\ndata: {start}\n\n");
    let server = MockServer::repeating(vec![
        Reply::sse(head.into_bytes()).endless(delta.into_bytes(), 64 * 1024 * 1024),
    ])
    .unwrap();
    let mut config = ProviderConfig::new(server.url(""), None);
    config.max_response_bytes = 256 * 1024;
    let provider = AnthropicProvider::new(config);
    let request = ProviderRequest::new("claude", vec![Message::user("hi")]);
    let error = stream(&provider, &request).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { .. }),
        "{error:?}"
    );
}
