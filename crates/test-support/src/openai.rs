//! Scripted replies in the OpenAI chat-completions streaming format, built as plain
//! JSON (no dependency on the provider crate that parses them).
//!
//! What the real API sends and these do too: a first delta with the role, content in
//! several deltas, tool-call arguments split across deltas with the id and name only
//! in the first, a `finish_reason` chunk, a usage chunk with empty `choices`, `[DONE]`.

use serde_json::json;

use crate::reply::Reply;
use crate::sse::SseEvent;

/// The path of the chat-completions endpoint, under the `/v1` base URL.
pub const CHAT_PATH: &str = "/v1/chat/completions";

/// A tool call the scripted model makes: id, tool name, raw argument text.
pub type Call<'a> = (&'a str, &'a str, &'a str);

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> SseEvent {
    SseEvent::data(
        json!({
            "id": "chatcmpl-e2e",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string(),
    )
}

fn usage(input: u64, output: u64) -> SseEvent {
    SseEvent::data(
        json!({
            "id": "chatcmpl-e2e",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": input, "completion_tokens": output,
                      "total_tokens": input + output},
        })
        .to_string(),
    )
}

/// The events of a streamed text answer (split in two deltas), with usage.
pub fn text_events(text: &str) -> Vec<SseEvent> {
    let middle = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(index, _)| index);
    let (first, second) = text.split_at(middle);
    vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": first}), None),
        chunk(json!({"content": second}), None),
        chunk(json!({}), Some("stop")),
        usage(100, 20),
        SseEvent::data("[DONE]"),
    ]
}

/// A streamed text answer.
pub fn text(text: &str) -> Reply {
    Reply::events(&text_events(text))
}

/// A whole (not streamed) text answer, as a `stream: false` request gets it (the
/// rolling summary's call, a provider that does not stream).
pub fn whole_text(text: &str) -> Reply {
    whole(
        json!({"role": "assistant", "content": text}),
        "stop",
        (100, 20),
    )
}

/// A whole (not streamed) Chat Completions reply: `message`, why it finished, and the
/// `(prompt, completion)` tokens it reports.
fn whole(
    message: serde_json::Value,
    finish_reason: &str,
    (prompt, completion): (u64, u64),
) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-e2e",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
            }],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        })
        .to_string(),
    )
}

/// The events of a turn of parallel tool calls, each call's arguments split in two deltas.
pub fn tool_call_events(calls: &[Call<'_>]) -> Vec<SseEvent> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let middle = arguments.len() / 2;
        let middle = (middle..=arguments.len())
            .find(|at| arguments.is_char_boundary(*at))
            .unwrap_or(arguments.len());
        let (first, second) = arguments.split_at(middle);
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": first}}]}),
            None,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": second}}]}),
            None,
        ));
    }
    events.push(chunk(json!({}), Some("tool_calls")));
    events.push(usage(150, 30));
    events.push(SseEvent::data("[DONE]"));
    events
}

/// A turn of tool calls.
pub fn tool_calls(calls: &[Call<'_>]) -> Reply {
    Reply::events(&tool_call_events(calls))
}

/// A whole (not streamed) turn of parallel tool calls, as a `stream: false` request
/// gets it.
pub fn whole_tool_calls(calls: &[Call<'_>]) -> Reply {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    whole(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
        (150, 30),
    )
}

/// A stream that sends some text and then stays open (for cancellation tests).
pub fn hold_after_text(text: &str) -> Reply {
    Reply::events(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
    ])
    .hanging()
}
