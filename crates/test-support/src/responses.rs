//! The OpenAI Responses API for tests: scripted streamed replies, and the request
//! checks of a strict mock that refuses what OpenAI refuses.
//!
//! What the checks model, and where each comes from:
//! - a `function_call_output` whose `call_id` names no earlier `function_call`: 400
//!   "No tool call found for function call output with call_id …" (OpenAI's answer);
//! - a `reasoning` item not followed by the item it led to (an assistant message or a
//!   function call): 400 "Item '…' of type 'reasoning' was provided without its
//!   required following item." (OpenAI's answer);
//! - with `store: false`, a `reasoning` item without `encrypted_content`: 404 "Item with
//!   id '…' not found. Items are not persisted when `store` is set to false." (OpenAI's
//!   answer: nothing was kept to look the id up in);
//! - `include: ["reasoning.encrypted_content"]` for a model without reasoning
//!   (gpt-4o, gpt-4.1, gpt-5-chat): 400 "Encrypted content is not supported with this
//!   model." (OpenAI's answer);
//! - a tool in the chat-completions shape (`{type, function: {…}}`): 400 "Missing
//!   required parameter: `'tools[0].name'`." (OpenAI's answer);
//! - content parts (`input_text`, `input_image`, `input_file`) in a user message or a
//!   `function_call_output`'s `output` list, with a wrong type, a missing field or a
//!   `data:` URL of the wrong media type: 400 as OpenAI answers
//!   ([`check_responses_content`]);
//! - `store` missing or `true` while reasoning items are sent back: refused by this
//!   mock as a contract of our client (it keeps nothing at the provider, so the items
//!   exist only in the request); OpenAI's own answer to that case is not recorded.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::reply::Reply;
use crate::server::MockServer;
use crate::sse::SseEvent;
use crate::strict_parts::check_responses_content;

/// The path of the Responses endpoint, under the `/v1` base URL.
pub const RESPONSES_PATH: &str = "/v1/responses";

/// A refusal: the HTTP status and OpenAI's error body.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// 400 or 404.
    pub status: u16,
    /// `{"error": {"message", "type", "param", "code"}}`.
    pub body: Value,
}

impl Refusal {
    fn new(status: u16, message: String, param: Option<&str>) -> Self {
        Self {
            status,
            body: json!({"error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": null,
            }}),
        }
    }

    /// The refusal's message.
    pub fn message(&self) -> &str {
        self.body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The reply a server sends for it.
    pub fn reply(&self) -> Reply {
        Reply::json(self.status, self.body.to_string())
    }
}

/// Whether `model` reasons (and so takes `include: ["reasoning.encrypted_content"]`).
fn reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series = ["o1", "o3", "o4"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    });
    o_series || (name.starts_with("gpt-5") && !name.contains("-chat"))
}

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Checks a Responses request body as OpenAI does (see the module docs for each rule
/// and its source); the first rule broken is the refusal.
pub fn validate_responses_request(body: &Value) -> Result<(), Refusal> {
    let bad = |message: String, param: Option<&str>| Refusal::new(400, message, param);
    let model = text_of(body, "model").ok_or(bad(
        "Missing required parameter: 'model'.".into(),
        Some("model"),
    ))?;
    if body.get("messages").is_some() {
        return Err(bad(
            "Unrecognized request argument supplied: messages".into(),
            None,
        ));
    }
    let wants_encrypted = body
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|include| {
            include
                .iter()
                .any(|v| v.as_str() == Some("reasoning.encrypted_content"))
        });
    if wants_encrypted && !reasoning_model(model) {
        return Err(bad(
            "Encrypted content is not supported with this model.".into(),
            Some("include"),
        ));
    }
    for (at, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if text_of(tool, "type") == Some("function") && text_of(tool, "name").is_none() {
            return Err(bad(
                format!("Missing required parameter: 'tools[{at}].name'."),
                Some(&format!("tools[{at}].name")),
            ));
        }
    }
    let stateless = body.get("store") == Some(&Value::Bool(false));
    let items: Vec<&Value> = match body.get("input") {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(items)) => items.iter().collect(),
        _ => {
            return Err(bad(
                "Missing required parameter: 'input'.".into(),
                Some("input"),
            ));
        }
    };
    let mut call_ids: Vec<&str> = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let kind = text_of(item, "type").unwrap_or("message");
        let param = format!("input[{at}]");
        match kind {
            "message" => {
                let role = text_of(item, "role").unwrap_or("");
                if !["user", "assistant", "system", "developer"].contains(&role) {
                    return Err(bad(
                        format!(
                            "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
                        ),
                        Some(&format!("{param}.role")),
                    ));
                }
                match item.get("content") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(parts)) => {
                        let at = format!("{param}.content");
                        check_responses_content(parts, &at)
                            .map_err(|message| bad(message, Some(&at)))?;
                    }
                    _ => {
                        return Err(bad(
                            format!("Missing required parameter: '{param}.content'."),
                            Some(&format!("{param}.content")),
                        ));
                    }
                }
            }
            "function_call" => {
                let call_id = text_of(item, "call_id");
                let complete = call_id.is_some()
                    && text_of(item, "name").is_some()
                    && text_of(item, "arguments").is_some();
                match call_id {
                    Some(id) if complete => call_ids.push(id),
                    _ => {
                        return Err(bad(
                            format!(
                                "Missing required parameter: '{param}.call_id', '.name' or '.arguments'."
                            ),
                            Some(&param),
                        ));
                    }
                }
            }
            "function_call_output" => {
                let call_id = text_of(item, "call_id").unwrap_or("");
                if !call_ids.contains(&call_id) {
                    return Err(bad(
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        Some("input"),
                    ));
                }
                match item.get("output") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(parts)) => {
                        let at = format!("{param}.output");
                        check_responses_content(parts, &at)
                            .map_err(|message| bad(message, Some(&at)))?;
                    }
                    _ => {
                        return Err(bad(
                            format!("Missing required parameter: '{param}.output'."),
                            Some(&format!("{param}.output")),
                        ));
                    }
                }
            }
            "reasoning" => {
                let id = text_of(item, "id").unwrap_or("");
                if !item.get("summary").is_some_and(Value::is_array) {
                    return Err(bad(
                        format!("Missing required parameter: '{param}.summary'."),
                        Some(&format!("{param}.summary")),
                    ));
                }
                if !stateless {
                    return Err(bad(
                        format!(
                            "reasoning item '{id}' was sent back without `store: false` (this mock's contract: the client keeps nothing at the provider)"
                        ),
                        Some("store"),
                    ));
                }
                if text_of(item, "encrypted_content").is_none() {
                    return Err(Refusal::new(
                        404,
                        format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                        ),
                        Some("input"),
                    ));
                }
                let next = items.get(at + 1).copied();
                let followed = next.is_some_and(|next| {
                    let next_kind = text_of(next, "type").unwrap_or("message");
                    next_kind == "function_call"
                        || next_kind == "reasoning"
                        || (next_kind == "message" && text_of(next, "role") == Some("assistant"))
                });
                if !followed {
                    return Err(bad(
                        format!(
                            "Item '{id}' of type 'reasoning' was provided without its required following item."
                        ),
                        Some("input"),
                    ));
                }
            }
            other => {
                return Err(bad(
                    format!("Invalid value: '{other}'."),
                    Some(&format!("{param}.type")),
                ));
            }
        }
    }
    Ok(())
}

/// A server for `POST /v1/responses` that checks every request with
/// [`validate_responses_request`] (a refused request gets OpenAI's error and uses up
/// no reply) and answers the others with `replies` in order.
pub fn strict_server(replies: Vec<Reply>) -> std::io::Result<MockServer> {
    let script = Mutex::new(VecDeque::from(replies));
    MockServer::builder()
        .only("POST", RESPONSES_PATH)
        .respond_with(move |request| {
            if let Err(refusal) = validate_responses_request(&request.body) {
                eprintln!(
                    "strict Responses mock refused the request: {}",
                    refusal.message()
                );
                return refusal.reply();
            }
            let next = script
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop_front();
            next.unwrap_or_else(|| {
                Reply::json(
                    500,
                    r#"{"error":{"message":"script exhausted","type":"server_error"}}"#,
                )
            })
        })
        .start()
}

fn event(value: Value) -> SseEvent {
    let kind = text_of(&value, "type").unwrap_or("").to_owned();
    SseEvent::named(kind, value.to_string())
}

fn completed(input: u64, output: u64, reasoning: u64) -> SseEvent {
    event(json!({"type": "response.completed", "response": {
        "id": "resp_e2e", "object": "response", "status": "completed",
        "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": output,
                  "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": input + output}}}))
}

/// A streamed text answer.
pub fn text(text: &str) -> Reply {
    Reply::events(&[
        event(
            json!({"type": "response.created", "response": {"id": "resp_e2e", "status": "in_progress"}}),
        ),
        event(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "msg_e2e", "type": "message", "role": "assistant", "content": []}}),
        ),
        event(json!({"type": "response.output_text.delta", "output_index": 0, "delta": text})),
        event(json!({"type": "response.output_text.done", "output_index": 0, "text": text})),
        event(
            json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "msg_e2e", "type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": text}]}}),
        ),
        completed(100, 20, 0),
    ])
}

/// A streamed turn of a reasoning model: a reasoning item `(id, summary,
/// encrypted_content)`, then function calls `(call_id, name, arguments)` whose
/// arguments arrive in two deltas.
pub fn reasoning_then_calls(reasoning: (&str, &str, &str), calls: &[(&str, &str, &str)]) -> Reply {
    let (id, summary, encrypted) = reasoning;
    let mut events = vec![
        event(
            json!({"type": "response.created", "response": {"id": "resp_e2e", "status": "in_progress"}}),
        ),
        event(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": id, "type": "reasoning", "summary": []}}),
        ),
        event(
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
        ),
        event(
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
            "summary_index": 0, "delta": summary}),
        ),
        event(
            json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": id, "type": "reasoning", "encrypted_content": encrypted,
                     "summary": [{"type": "summary_text", "text": summary}]}}),
        ),
    ];
    for (at, (call_id, name, arguments)) in calls.iter().enumerate() {
        let index = at + 1;
        let middle = (arguments.len() / 2..=arguments.len())
            .find(|cut| arguments.is_char_boundary(*cut))
            .unwrap_or(arguments.len());
        let (first, second) = arguments.split_at(middle);
        let item_id = format!("fc_{call_id}");
        events.push(event(json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": item_id, "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}})));
        for piece in [first, second] {
            events.push(event(
                json!({"type": "response.function_call_arguments.delta",
                "output_index": index, "item_id": item_id, "delta": piece}),
            ));
        }
        events.push(event(
            json!({"type": "response.function_call_arguments.done",
            "output_index": index, "item_id": item_id, "arguments": arguments}),
        ));
        events.push(event(json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": item_id, "type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}})));
    }
    events.push(completed(150, 30, 12));
    Reply::events(&events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(input: Value) -> Value {
        json!({"model": "gpt-5-mini", "store": false, "include": ["reasoning.encrypted_content"], "input": input})
    }

    #[test]
    fn a_proper_round_trip_passes() {
        let body = request(json!([
            {"role": "user", "content": "x"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ]));
        assert_eq!(validate_responses_request(&body), Ok(()));
    }

    #[test]
    fn what_openai_refuses_is_refused() {
        let orphan = request(json!([
            {"role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "c9", "output": "ok"},
        ]));
        let refusal = validate_responses_request(&orphan).unwrap_err();
        assert_eq!(refusal.status, 400);
        assert!(refusal.message().contains("call_id c9"));

        let dangling = request(json!([
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"role": "user", "content": "x"},
        ]));
        let refusal = validate_responses_request(&dangling).unwrap_err();
        assert!(
            refusal
                .message()
                .contains("without its required following item")
        );

        let unencrypted = request(json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"role": "assistant", "content": "x"},
        ]));
        assert_eq!(
            validate_responses_request(&unencrypted).unwrap_err().status,
            404
        );

        let mut stored = request(json!([
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"role": "assistant", "content": "x"},
        ]));
        stored["store"] = json!(true);
        assert!(
            validate_responses_request(&stored)
                .unwrap_err()
                .message()
                .contains("store")
        );

        let mut gpt4o = request(json!("hi"));
        gpt4o["model"] = json!("gpt-4o");
        assert!(
            validate_responses_request(&gpt4o)
                .unwrap_err()
                .message()
                .contains("Encrypted content")
        );

        let mut chat_tool = request(json!("hi"));
        chat_tool["tools"] = json!([{"type": "function", "function": {"name": "f"}}]);
        assert!(
            validate_responses_request(&chat_tool)
                .unwrap_err()
                .message()
                .contains("tools[0].name")
        );
    }
}
