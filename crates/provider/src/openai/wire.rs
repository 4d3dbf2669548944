//! The OpenAI chat-completions wire format: request bodies and whole responses.

use oxydra_types::{CallId, ContentPart, FinishReason, Message, MessageRole, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ProviderError;
use crate::http_error::excerpt;
use crate::parts::{data_url, text_then_parts};
use crate::reasoning_settings::ReasoningEffort;
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};

/// Whether `model` wants `max_completion_tokens` instead of `max_tokens` (OpenAI's
/// reasoning models reject the latter).
fn uses_max_completion_tokens(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// The JSON body of a chat-completions request, borrowing from the request: it is
/// serialised straight from the messages, without building (and dropping) a copy of
/// the whole conversation as a `serde_json::Value` on every call.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<RequestMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// Instead of `max_tokens` for OpenAI's reasoning models.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<RequestTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    /// How hard a reasoning model thinks; absent leaves the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message on the wire. `content` is a string (`""` for an assistant message that
/// only calls tools: every OpenAI-compatible server takes `""` there; llama-cpp-python
/// answers 500 to `null` and its chat template fails on a missing key), or, for a user
/// message with parts, an array of typed content parts.
#[derive(Debug, Serialize)]
struct RequestMessage<'a> {
    role: &'a str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<RequestToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct RequestToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: RequestFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct RequestFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct RequestTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: RequestFunction<'a>,
}

#[derive(Debug, Serialize)]
struct RequestFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// A message's content: its text alone, or typed parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Value>),
}

/// A part as a chat-completions content part: an image as `image_url` (its URL, or its
/// bytes as a `data:` URL), a PDF as `file` with its bytes as a `data:` URL.
fn part_to_wire(part: &ContentPart) -> Value {
    match part {
        ContentPart::Image { media_type, data } => {
            json!({"type": "image_url", "image_url": {"url": data_url(media_type, data)}})
        }
        ContentPart::ImageUrl { url } => json!({"type": "image_url", "image_url": {"url": url}}),
        ContentPart::Document {
            media_type,
            data,
            name,
        } => json!({"type": "file", "file": {
            "filename": name.as_deref().unwrap_or("document.pdf"),
            "file_data": data_url(media_type, data),
        }}),
    }
}

/// A user message's content: its text alone when it has no parts; else a `text` part
/// (when there is text) and its parts after it.
fn user_content(message: &Message) -> Content<'_> {
    match text_then_parts(message, "text", part_to_wire) {
        Some(parts) => Content::Parts(parts),
        None => Content::Text(message.text()),
    }
}

/// The messages on the wire. A tool message carries text only, so the parts of tool
/// results (an image `file_read` returned) follow that turn's tool messages as one
/// user message, each result's parts introduced by a line naming its call.
fn messages_to_wire(messages: &[Message]) -> Vec<RequestMessage<'_>> {
    let mut wire = Vec::with_capacity(messages.len());
    let mut pending: Vec<Value> = Vec::new();
    for message in messages {
        if message.role != MessageRole::Tool && !pending.is_empty() {
            wire.push(tool_parts_message(std::mem::take(&mut pending)));
        }
        if message.role == MessageRole::Tool && !message.parts.is_empty() {
            let call = message
                .tool_call_id
                .as_ref()
                .map(CallId::as_str)
                .unwrap_or_default();
            pending.push(json!({
                "type": "text",
                "text": format!("Attached to the result of tool call {call}:"),
            }));
            pending.extend(message.parts.iter().map(part_to_wire));
        }
        wire.push(message_to_wire(message));
    }
    if !pending.is_empty() {
        wire.push(tool_parts_message(pending));
    }
    wire
}

fn tool_parts_message<'a>(parts: Vec<Value>) -> RequestMessage<'a> {
    RequestMessage {
        role: "user",
        content: Content::Parts(parts),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn message_to_wire(message: &Message) -> RequestMessage<'_> {
    match message.role {
        MessageRole::System | MessageRole::User => RequestMessage {
            role: message.role.as_str(),
            content: user_content(message),
            tool_calls: Vec::new(),
            tool_call_id: None,
        },
        MessageRole::Assistant => RequestMessage {
            role: "assistant",
            content: Content::Text(message.content.as_deref().unwrap_or("")),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| RequestToolCall {
                    id: call.id.as_str(),
                    kind: "function",
                    function: RequestFunctionCall {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
            tool_call_id: None,
        },
        MessageRole::Tool => RequestMessage {
            role: "tool",
            content: Content::Text(message.text()),
            tool_calls: Vec::new(),
            tool_call_id: Some(
                message
                    .tool_call_id
                    .as_ref()
                    .map(CallId::as_str)
                    .unwrap_or_default(),
            ),
        },
    }
}

/// The body of a chat-completions request.
pub(crate) fn request_body(
    request: &ProviderRequest,
    effort: Option<ReasoningEffort>,
    stream: bool,
) -> RequestBody<'_> {
    let reasoning = uses_max_completion_tokens(&request.model);
    let tools: Vec<RequestTool<'_>> = request
        .tools
        .iter()
        .map(|tool| RequestTool {
            kind: "function",
            function: RequestFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        })
        .collect();
    let tool_choice = (!tools.is_empty()).then(|| match &request.tool_choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    });
    RequestBody {
        model: &request.model,
        messages: messages_to_wire(&request.messages),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        max_tokens: request.max_tokens.filter(|_| !reasoning),
        max_completion_tokens: request.max_tokens.filter(|_| reasoning),
        temperature: request.temperature,
        tools,
        tool_choice,
        reasoning_effort: effort.map(ReasoningEffort::as_str),
    }
}

/// The finish reason, as the server named it (`None`: it named none); a `stop` beside
/// tool calls (Ollama) is `ToolCalls`.
pub(crate) fn finish_reason_with_calls(reason: Option<&str>, has_calls: bool) -> FinishReason {
    match reason.map(finish_reason) {
        Some(FinishReason::Stop) | None if has_calls => FinishReason::ToolCalls,
        Some(reason) => reason,
        None => FinishReason::Stop,
    }
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
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`: the parts of the prompt read from and written to
/// the cache.
#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`: the part of the output spent reasoning.
#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Our [`Usage`]: `prompt_tokens` already counts cached and written tokens.
    pub(crate) fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens_details.as_ref();
        let cached = prompt.and_then(|d| d.cached_tokens).unwrap_or(0);
        let written = prompt.and_then(|d| d.cache_write_tokens).unwrap_or(0);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        Usage::new(self.prompt_tokens, self.completion_tokens, cached)
            .with_cache_write_tokens(written)
            .with_reasoning_tokens(reasoning)
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
    /// llama.cpp, vLLM, DeepSeek.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// Ollama's `/v1`, Groq, OpenRouter.
    #[serde(default)]
    reasoning: Option<String>,
    /// Only `tool_calls` is read: llama-cpp-python repeats the first call in the
    /// legacy `function_call` (its name with a stray `:`), which is no second call.
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
    let reasoning = choice
        .message
        .reasoning_content
        .or(choice.message.reasoning)
        .filter(|text| !text.is_empty());
    let finish_reason = if refused {
        FinishReason::Refusal
    } else {
        finish_reason_with_calls(choice.finish_reason.as_deref(), !tool_calls.is_empty())
    };
    let content = if tool_calls.is_empty() {
        Some(content.unwrap_or_default())
    } else {
        content.filter(|t| !t.is_empty())
    };
    Ok(ProviderResponse {
        fallbacks: Vec::new(),
        message: Message::assistant_with_tool_calls(content, tool_calls),
        finish_reason,
        usage,
        reasoning,
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
        let detailed = br#"{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":20,"completion_tokens":9,
            "prompt_tokens_details":{"cached_tokens":null,"cache_write_tokens":15},
            "completion_tokens_details":{"reasoning_tokens":6}}}"#;
        assert_eq!(
            parse_completion(detailed).unwrap().usage,
            Usage::new(20, 9, 0)
                .with_cache_write_tokens(15)
                .with_reasoning_tokens(6)
        );
        assert_eq!(response.message.content, None);
        assert_eq!(response.message.tool_calls[1].arguments, "{bad");
    }

    #[test]
    fn reasoning_content_is_kept_apart_and_stop_beside_calls_is_tool_calls() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":"",
            "reasoning_content":"Think.","tool_calls":[{"id":"c","type":"function",
            "function":{"name":"a","arguments":{"x":1}}}]},"finish_reason":"stop"}]}"#;
        let response = parse_completion(body).unwrap();
        assert_eq!(response.reasoning.as_deref(), Some("Think."));
        assert_eq!(response.message.content, None);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        // Arguments sent as an object are kept as its JSON text.
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"x":1}"#);
        let body = br#"{"choices":[{"message":{"content":"Hi","reasoning_content":""},"finish_reason":"stop"}]}"#;
        let response = parse_completion(body).unwrap();
        assert_eq!(response.reasoning, None);
        assert_eq!(response.finish_reason, FinishReason::Stop);
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

    fn body(request: &ProviderRequest, stream: bool) -> Value {
        serde_json::to_value(request_body(request, None, stream)).unwrap()
    }

    #[test]
    fn reasoning_effort_is_sent_only_when_set() {
        let request = ProviderRequest::new("o3-mini", vec![Message::user("x")]);
        assert!(body(&request, false).get("reasoning_effort").is_none());
        let with_effort = serde_json::to_value(request_body(
            &request,
            Some(ReasoningEffort::Minimal),
            false,
        ))
        .unwrap();
        assert_eq!(with_effort["reasoning_effort"], "minimal");
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens() {
        let mut request = ProviderRequest::new("o3-mini", vec![Message::user("x")]);
        request.max_tokens = Some(100);
        assert_eq!(body(&request, false)["max_completion_tokens"], 100);
        assert!(body(&request, false).get("max_tokens").is_none());
        request.model = "gpt-4o".into();
        assert_eq!(body(&request, false)["max_tokens"], 100);
        assert!(body(&request, false).get("max_completion_tokens").is_none());
    }

    #[test]
    fn every_role_is_written_in_the_chat_completions_shape() {
        let assistant = Message::assistant_with_tool_calls(
            None,
            vec![ToolCall::new(
                CallId::from("c1"),
                "file_read",
                r#"{"path":"a"}"#,
            )],
        );
        let mut request = ProviderRequest::new(
            "gpt-4o",
            vec![
                Message::system("be brief"),
                Message::user("read a"),
                assistant,
                Message::tool_result(CallId::from("c1"), "file_read", "contents"),
            ],
        );
        request.temperature = Some(0.5);
        request.tools = vec![oxydra_types::ToolSchema::new(
            "file_read",
            "Reads a file",
            json!({"type": "object"}),
        )];
        assert_eq!(
            body(&request, true),
            json!({
                "model": "gpt-4o",
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0.5,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "read a"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "file_read", "arguments": "{\"path\":\"a\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "contents"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "file_read", "description": "Reads a file",
                    "parameters": {"type": "object"}}}],
                "tool_choice": "auto",
            })
        );
        // Without tools there is no tool_choice; without streaming no stream_options.
        request.tools.clear();
        let plain = body(&request, false);
        assert!(plain.get("tool_choice").is_none());
        assert!(plain.get("stream_options").is_none());
    }
}
