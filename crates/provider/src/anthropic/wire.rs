//! The Anthropic Messages wire format: request bodies and whole responses.

use oxydra_types::{CallId, FinishReason, Message, MessageRole, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ProviderError;
use crate::http_error::{excerpt, object};
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};

/// `max_tokens` sent when the request names none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4_096;

/// Failed tool results (they begin with this) are flagged `is_error` for the model.
const FAILED_TOOL_PREFIX: &str = oxydra_types::TOOL_FAILURE_PREFIX;

/// A tool call's `input` object: the raw arguments parsed. Arguments that are not a
/// JSON object (the model sent bad JSON earlier) are passed back as
/// `{"invalid_arguments": "<raw>"}` so the API accepts the history and the model sees
/// what it sent.
fn tool_input(call: &ToolCall) -> Value {
    if call.arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({"invalid_arguments": call.arguments}),
    }
}

/// Appends `blocks` as a message of `role`, merging into the previous message when it
/// has the same role (the API wants user and assistant turns to alternate).
fn push_blocks(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    messages.push(json!({"role": role, "content": blocks}));
}

/// The system prompt (every system message, joined) and the conversation.
fn messages_to_wire(messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut wire: Vec<Value> = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::System => system.push(message.text()),
            MessageRole::User => {
                let text = message.text();
                let blocks = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "text", "text": text})]
                };
                push_blocks(&mut wire, "user", blocks);
            }
            MessageRole::Assistant => {
                let mut blocks = Vec::new();
                if let Some(text) = message.content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in &message.tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id.as_str(),
                        "name": call.name,
                        "input": tool_input(call),
                    }));
                }
                push_blocks(&mut wire, "assistant", blocks);
            }
            MessageRole::Tool => {
                let mut block = object(json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.as_ref().map(CallId::as_str).unwrap_or_default(),
                    "content": message.text(),
                }));
                if message.text().starts_with(FAILED_TOOL_PREFIX) {
                    block.insert("is_error".into(), json!(true));
                }
                push_blocks(&mut wire, "user", vec![Value::Object(block)]);
            }
        }
    }
    let system: Vec<&str> = system.into_iter().filter(|s| !s.is_empty()).collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, wire)
}

/// The JSON body of a Messages request.
pub(crate) fn request_body(request: &ProviderRequest, stream: bool) -> Value {
    let (system, messages) = messages_to_wire(&request.messages);
    let mut body = object(json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    }));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    if let Some(system) = system {
        body.insert("system".into(), json!(system));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    Value::Object(body)
}

/// Anthropic's stop reason.
pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::Refusal,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// `usage` as Anthropic reports it. Its `input_tokens` excludes cache reads and
/// writes; ours includes them.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Takes in the fields `newer` carries (counts are cumulative).
    pub(crate) fn merge(&mut self, newer: &WireUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// Our [`Usage`].
    pub(crate) fn to_usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let input = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cached)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        Usage::new(input, self.output_tokens.unwrap_or(0), cached)
    }
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// Parses a whole (non-streamed) Messages response.
pub(crate) fn parse_response(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    let decode_error = |what: String| ProviderError::Decode {
        what,
        excerpt: excerpt(&String::from_utf8_lossy(body)),
    };
    let response: WireResponse = serde_json::from_slice(body)
        .map_err(|e| decode_error(format!("Anthropic response ({e})")))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in &response.content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(decode_error(
                        "Anthropic tool_use block without id or name".into(),
                    ));
                };
                let arguments = match &block["input"] {
                    Value::Null => String::new(),
                    input => input.to_string(),
                };
                tool_calls.push(ToolCall::new(CallId::from(id), name, arguments));
            }
            _ => {} // thinking and server-tool blocks are not part of the message
        }
    }
    let finish_reason = match response.stop_reason.as_deref() {
        Some(reason) => finish_reason(reason),
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let content = if text.is_empty() && !tool_calls.is_empty() {
        None
    } else {
        Some(text)
    };
    Ok(ProviderResponse {
        message: Message::assistant_with_tool_calls(content, tool_calls),
        finish_reason,
        usage: response.usage.to_usage(),
        reasoning: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_is_lifted_and_tool_results_grouped() {
        let calls = vec![
            ToolCall::new(CallId::from("t1"), "a", r#"{"x":1}"#),
            ToolCall::new(CallId::from("t2"), "b", "{broken"),
        ];
        let request = ProviderRequest::new(
            "claude-sonnet-4-20250514",
            vec![
                Message::system("be brief"),
                Message::user("go"),
                Message::assistant_with_tool_calls(Some("ok".into()), calls),
                Message::tool_result(CallId::from("t1"), "a", "one"),
                Message::tool_result(CallId::from("t2"), "b", "Tool execution failed: bad"),
                Message::system("summary"),
                Message::user("and?"),
            ],
        );
        let body = request_body(&request, true);
        assert_eq!(body["system"], "be brief\n\nsummary");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["input"], json!({"x": 1}));
        assert_eq!(
            messages[1]["content"][2]["input"],
            json!({"invalid_arguments": "{broken"})
        );
        let results = messages[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["tool_use_id"], "t1");
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2]["text"], "and?");
    }

    #[test]
    fn whole_response_parses() {
        let body = br#"{"content":[{"type":"text","text":"Let me"},{"type":"tool_use","id":"toolu_1","name":"get","input":{"q":"x"}}],
            "stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage, Usage::new(15, 3, 5));
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"q":"x"}"#);
        assert!(matches!(
            parse_response(b"<html>"),
            Err(ProviderError::Decode { .. })
        ));
    }
}
