//! Scripted replies in the Anthropic Messages streaming format, built as plain JSON.
//!
//! What the real API sends and these do too: `message_start` with input usage, each
//! content block opened, filled in deltas (a `ping` between) and closed, then
//! `message_delta` with the stop reason and output usage, and `message_stop`.

/// The path of the Messages endpoint, under the base URL.
pub const MESSAGES_PATH: &str = "/v1/messages";

use serde_json::json;

use crate::reply::Reply;
use crate::sse::SseEvent;

fn event(name: &str, data: serde_json::Value) -> SseEvent {
    SseEvent::named(name, data.to_string())
}

fn start() -> SseEvent {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_e2e", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 120, "output_tokens": 1}}}),
    )
}

fn stop(reason: &str) -> [SseEvent; 2] {
    [
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": 25}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
}

/// A streamed text answer (two deltas, with a ping between).
pub fn text(text: &str) -> Reply {
    let middle = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(index, _)| index);
    let (first, second) = text.split_at(middle);
    let mut events = vec![
        start(),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    for part in [first, second] {
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": part}}),
        ));
    }
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.extend(stop("end_turn"));
    Reply::events(&events)
}

/// A turn of `tool_use` blocks: (id, tool name, JSON input text split in two deltas).
pub fn tool_uses(calls: &[(&str, &str, &str)]) -> Reply {
    let mut events = vec![start()];
    for (index, (id, name, input)) in calls.iter().enumerate() {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        let middle = (input.len() / 2..=input.len())
            .find(|at| input.is_char_boundary(*at))
            .unwrap_or(input.len());
        let (first, second) = input.split_at(middle);
        for part in [first, second] {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.extend(stop("tool_use"));
    Reply::events(&events)
}
