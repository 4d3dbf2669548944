use super::*;
use oxydra_types::{FinishReason, ReasoningPart};
use serde_json::json;

fn decode(decoder: &mut OpenAiResponsesStreamDecoder, events: &[Value]) -> Vec<StreamItem> {
    let mut out = VecDeque::new();
    for event in events {
        decoder.decode_data(&event.to_string(), &mut out).unwrap();
    }
    out.into_iter().collect()
}

fn completed() -> Value {
    json!({"type": "response.completed", "response": {"status": "completed",
        "usage": {"input_tokens": 3, "output_tokens": 2}}})
}

#[test]
fn arguments_from_done_only_when_no_delta_came() {
    let mut decoder = OpenAiResponsesStreamDecoder::new();
    let items = decode(
        &mut decoder,
        &[
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"x\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{\"x\":1}"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a", "arguments": "{\"x\":1}"}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "b", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{}"}),
            json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"}}),
            completed(),
        ],
    );
    let mut acc = crate::StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    let response = acc.finish().unwrap();
    let calls: Vec<_> = response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(calls, vec![("c1", "a", "{\"x\":1}"), ("c2", "b", "{}")]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert!(decoder.is_done());
}

#[test]
fn a_call_seen_only_when_done_is_still_a_call() {
    let items = decode(
        &mut OpenAiResponsesStreamDecoder::new(),
        &[
            json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"}}),
            completed(),
        ],
    );
    assert!(
        matches!(&items[0], StreamItem::ToolCallDelta(d) if d.arguments == "{}" && d.name.as_deref() == Some("a"))
    );
}

#[test]
fn reasoning_summaries_stream_and_the_item_is_kept_whole() {
    let items = decode(
        &mut OpenAiResponsesStreamDecoder::new(),
        &[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "summary_index": 0, "delta": "One"}),
            json!({"type": "response.reasoning_summary_part.added", "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "summary_index": 1, "delta": "Two"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "One"}, {"type": "summary_text", "text": "Two"}],
                "encrypted_content": "enc"}}),
            json!({"type": "response.output_text.delta", "delta": "Hi"}),
            json!({"type": "response.output_text.done", "text": "Hi"}),
            completed(),
        ],
    );
    assert_eq!(
        items,
        vec![
            StreamItem::Reasoning("One".into()),
            StreamItem::Reasoning("\n\n".into()),
            StreamItem::Reasoning("Two".into()),
            StreamItem::ReasoningPart(ReasoningPart::Reasoning {
                id: "rs_1".into(),
                summary: vec!["One".into(), "Two".into()],
                encrypted_content: Some("enc".into()),
            }),
            StreamItem::Text("Hi".into()),
            StreamItem::Usage(oxydra_types::Usage::new(3, 2, 0)),
            StreamItem::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn incomplete_finishes_with_length() {
    let items = decode(
        &mut OpenAiResponsesStreamDecoder::new(),
        &[
            json!({"type": "response.output_text.delta", "delta": "Hal"}),
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}}}),
        ],
    );
    assert_eq!(
        items.last(),
        Some(&StreamItem::Finish(FinishReason::Length))
    );
}

#[test]
fn errors_name_code_and_message() {
    let mut decoder = OpenAiResponsesStreamDecoder::new();
    let error = decoder
        .decode_data(
            r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null}"#,
            &mut VecDeque::new(),
        )
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::RateLimited { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("rate_limit_exceeded: Slow down"));
    let error = OpenAiResponsesStreamDecoder::new()
        .decode_data(
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"Oops"}}}"#,
            &mut VecDeque::new(),
        )
        .unwrap_err();
    assert!(matches!(error, ProviderError::Server { .. }), "{error:?}");
}

#[test]
fn unknown_and_oddly_shaped_events_are_skipped_but_broken_known_ones_fail() {
    let mut decoder = OpenAiResponsesStreamDecoder::new();
    let mut out = VecDeque::new();
    decoder
        .decode_data(
            r#"{"type":"response.audio.delta","delta":{"odd":1}}"#,
            &mut out,
        )
        .unwrap();
    decoder
        .decode_data(r#"{"type":"response.output_item.done","item":{"type":"code_interpreter_call","code":"x"}}"#, &mut out)
        .unwrap();
    assert!(out.is_empty());
    let error = decoder
        .decode_data(
            r#"{"type":"response.output_text.delta","delta":5}"#,
            &mut out,
        )
        .unwrap_err();
    assert!(matches!(error, ProviderError::Decode { .. }));
    let error = decoder.decode_data("not json", &mut out).unwrap_err();
    assert!(matches!(error, ProviderError::Decode { .. }));
}

#[test]
fn a_tool_call_written_as_text_is_recovered() {
    let items = decode(
        &mut OpenAiResponsesStreamDecoder::with_tools(vec!["file_read".into()]),
        &[
            json!({"type": "response.output_text.delta", "delta": "<tool_call>{\"name\": \"file_read\", \"arguments\": {\"path\": \"a\"}}</tool_call>"}),
            completed(),
        ],
    );
    let mut acc = crate::StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    let response = acc.finish().unwrap();
    assert_eq!(response.message.tool_calls[0].name, "file_read");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn skipped_events_are_bounded() {
    let event =
        json!({"type": "response.code_interpreter_call_code.delta", "delta": "x".repeat(300)})
            .to_string();
    let limit = 3 * event.len();
    let mut decoder = OpenAiResponsesStreamDecoder::new().with_skip_limit(limit);
    let mut out = VecDeque::new();
    for _ in 0..3 {
        decoder.decode_data(&event, &mut out).unwrap();
    }
    let error = decoder.decode_data(&event, &mut out).unwrap_err();
    assert!(
        matches!(error, ProviderError::ResponseTooLarge { limit: l, .. } if l == limit),
        "{error:?}"
    );
}
