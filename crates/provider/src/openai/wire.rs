//! The OpenAI chat-completions wire format: request bodies and whole responses.

use oxydra_types::{CallId, FinishReason, Message, MessageRole, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ProviderError;
use crate::http_error::{excerpt, object};
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};

/// Whether `model` wants `max_completion_tokens` instead of `max_tokens` (OpenAI's
/// reasoning models reject the latter).
fn uses_max_completion_tokens(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// One message on the wire.
fn message_to_wire(message: &Message) -> Value {
    match message.role {
        MessageRole::System | MessageRole::User => json!({
            "role": message.role.as_str(),
            "content": message.text(),
        }),
        MessageRole::Assistant => {
            let mut wire = object(json!({
                "role": "assistant",
                "content": message.content.as_deref().filter(|t| !t.is_empty()),
            }));
            if !message.tool_calls.is_empty() {
                let calls: Vec<Value> = message
                    .tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id.as_str(),
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        })
                    })
                    .collect();
                wire.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(wire)
        }
        MessageRole::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_ref().map(CallId::as_str).unwrap_or_default(),
            "content": message.text(),
        }),
    }
}

/// The JSON body of a chat-completions request.
pub(crate) fn request_body(request: &ProviderRequest, stream: bool) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_to_wire).collect();
    let mut body = object(json!({
        "model": request.model,
        "messages": messages,
        "stream": stream,
    }));
    if stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(max_tokens) = request.max_tokens {
        let field = if uses_max_completion_tokens(&request.model) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max_tokens));
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
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), choice);
    }
    Value::Object(body)
}

/// OpenAI's finish reason.
pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// `usage` as OpenAI reports it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// Our [`Usage`].
    pub(crate) fn to_usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0);
        Usage::new(self.prompt_tokens, self.completion_tokens, cached)
    }
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    /// Raw; some servers send an object instead of a string.
    #[serde(default)]
    arguments: Option<Value>,
}

/// Parses a whole (non-streamed) chat-completions response.
pub(crate) fn parse_completion(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    let decode_error = |what: &str| ProviderError::Decode {
        what: what.to_owned(),
        excerpt: excerpt(&String::from_utf8_lossy(body)),
    };
    let completion: Completion = serde_json::from_slice(body)
        .map_err(|e| decode_error(&format!("OpenAI response ({e})")))?;
    let usage = completion.usage.map(|u| u.to_usage()).unwrap_or_default();
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| decode_error("OpenAI response without choices"))?;
    let tool_calls: Vec<ToolCall> = choice
        .message
        .tool_calls
        .into_iter()
        .map(|call| {
            let arguments = match call.function.arguments {
                Some(Value::String(raw)) => raw,
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            ToolCall::new(CallId::from(call.id), call.function.name, arguments)
        })
        .collect();
    let refused = choice.message.refusal.is_some() && choice.message.content.is_none();
    let content = choice.message.content.or(choice.message.refusal);
    let finish_reason = match choice.finish_reason.as_deref() {
        _ if refused => FinishReason::Refusal,
        Some(reason) => finish_reason(reason),
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let content = if tool_calls.is_empty() {
        Some(content.unwrap_or_default())
    } else {
        content.filter(|t| !t.is_empty())
    };
    Ok(ProviderResponse {
        message: Message::assistant_with_tool_calls(content, tool_calls),
        finish_reason,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_response_with_parallel_calls_parses() {
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"q\":1}"}},
            {"id":"call_2","type":"function","function":{"name":"b","arguments":"{bad"}}]},
            "finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}}"#;
        let response = parse_completion(body).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage, Usage::new(12, 7, 4));
        assert_eq!(response.message.content, None);
        assert_eq!(response.message.tool_calls[1].arguments, "{bad");
    }

    #[test]
    fn malformed_response_is_a_decode_error_with_excerpt() {
        match parse_completion(b"{\"choices\": [oops") {
            Err(ProviderError::Decode { excerpt, .. }) => assert!(excerpt.contains("oops")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_completion(b"{\"choices\": []}"),
            Err(ProviderError::Decode { .. })
        ));
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens() {
        let mut request = ProviderRequest::new("o3-mini", vec![Message::user("x")]);
        request.max_tokens = Some(100);
        assert_eq!(request_body(&request, false)["max_completion_tokens"], 100);
        request.model = "gpt-4o".into();
        assert_eq!(request_body(&request, false)["max_tokens"], 100);
    }
}
