//! The request checks of a llama.cpp-based server (llama.cpp's server,
//! llama-cpp-python), which refuse chat-completions requests that OpenAI itself takes.

use serde_json::Value;

use crate::strict_parts::check_openai_content;

/// The recorded answer of llama-cpp-python to an assistant message with
/// `content: null`: what a strict [`MockServer`](crate::MockServer) answers (HTTP 500)
/// to a request [`validate_openai_request`] refuses.
pub const STRICT_REFUSAL: &str = "local/llama_cpp_python_500_null_assistant_content.json";

/// Checks a chat-completions request body as a llama.cpp-based server does:
/// `messages` is an array; each message has a known role and a `content` that is a
/// string (or an array of typed parts: `text`, `image_url` and `file` for a user
/// message, `text` for others, each checked as OpenAI does, see
/// [`check_openai_content`]), never `null` or missing; an assistant's `tool_calls` carry an id, `type: function`, a name and a
/// string of arguments; a tool message's `tool_call_id` names a call of an earlier
/// assistant message. The error says which message fails and why.
pub fn validate_openai_request(body: &Value) -> Result<(), String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` is not an array")?;
    let mut call_ids: Vec<&str> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if !["system", "user", "assistant", "tool"].contains(&role) {
            return Err(format!("messages[{at}]: unknown role {role:?}"));
        }
        match message.get("content") {
            Some(Value::String(_)) => {}
            Some(Value::Array(parts)) if role == "system" || role == "user" => {
                if parts
                    .iter()
                    .any(|part| part.get("type").and_then(Value::as_str).is_none())
                {
                    return Err(format!("messages[{at}]: a content part without a type"));
                }
                check_openai_content(role, parts, &format!("messages[{at}].content"))?;
            }
            Some(Value::Array(parts)) if role == "tool" => {
                check_openai_content(role, parts, &format!("messages[{at}].content"))?;
            }
            Some(Value::Null) => return Err(format!("messages[{at}]: content is null")),
            Some(other) => return Err(format!("messages[{at}]: content is {other}")),
            None => return Err(format!("messages[{at}]: content is missing")),
        }
        if let Some(calls) = message.get("tool_calls") {
            let calls = calls
                .as_array()
                .filter(|_| role == "assistant")
                .ok_or(format!(
                    "messages[{at}]: tool_calls is not an assistant's list"
                ))?;
            for call in calls {
                let id = call.get("id").and_then(Value::as_str);
                let kind = call.get("type").and_then(Value::as_str);
                let name = call.pointer("/function/name").and_then(Value::as_str);
                let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
                match (id, kind, name, arguments) {
                    (Some(id), Some("function"), Some(_), Some(_)) => call_ids.push(id),
                    _ => return Err(format!("messages[{at}]: malformed tool call {call}")),
                }
            }
        }
        if role == "tool" {
            let id = message.get("tool_call_id").and_then(Value::as_str);
            match id {
                Some(id) if call_ids.contains(&id) => {}
                _ => {
                    return Err(format!(
                        "messages[{at}]: tool_call_id {id:?} answers no earlier call"
                    ));
                }
            }
        }
    }
    Ok(())
}
