//! The Responses API wire format: request bodies and whole (non-streamed) responses.

use oxydra_types::{
    CallId, ContentPart, FinishReason, Message, MessageRole, ReasoningPart, ToolCall, ToolSchema,
    Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ProviderError;
use crate::http_error::{WireError, classify, excerpt};
use crate::parts::{data_url, text_then_parts};
use crate::reasoning_settings::ReasoningEffort;
use crate::request::{ProviderRequest, ProviderResponse, ToolChoice};

/// What the client asks `include` for: the encrypted reasoning of each reasoning item,
/// so that a stateless (`store: false`) conversation can send it back.
const INCLUDE_ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Whether `model` is an OpenAI reasoning model (o-series, gpt-5 but not the
/// `gpt-5-chat` models). Only those accept `include: ["reasoning.encrypted_content"]`:
/// gpt-4o, gpt-4.1 and gpt-5-chat answer 400 "Encrypted content is not supported with
/// this model".
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series = ["o1", "o3", "o4"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    });
    o_series || (name.starts_with("gpt-5") && !name.contains("-chat"))
}

/// The JSON body of `POST /responses`, borrowing from the request.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<RequestTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    stream: bool,
    /// Always `false`: nothing is kept at the provider, every request carries the
    /// whole conversation.
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Debug, Serialize)]
struct ReasoningRequest {
    effort: &'static str,
    summary: &'static str,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
    },
    Reasoning {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        output: Content<'a>,
    },
}

/// A message's content or a function call's output: its text alone, or typed input
/// parts (`input_text`, `input_image`, `input_file`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Value>),
}

/// A part as a Responses input part: an image as `input_image` (its URL, or its bytes
/// as a `data:` URL), a PDF as `input_file` with its bytes as a `data:` URL.
fn part_to_wire(part: &ContentPart) -> Value {
    match part {
        ContentPart::Image { media_type, data } => json!({
            "type": "input_image",
            "image_url": data_url(media_type, data),
            "detail": "auto",
        }),
        ContentPart::ImageUrl { url } => {
            json!({"type": "input_image", "image_url": url, "detail": "auto"})
        }
        ContentPart::Document {
            media_type,
            data,
            name,
        } => json!({
            "type": "input_file",
            "filename": name.as_deref().unwrap_or("document.pdf"),
            "file_data": data_url(media_type, data),
        }),
    }
}

/// The content of a user message or a function call's output: the text alone without
/// parts; else an `input_text` part (when there is text) and the parts after it.
fn content(message: &Message) -> Content<'_> {
    match text_then_parts(message, "input_text", part_to_wire) {
        Some(parts) => Content::Parts(parts),
        None => Content::Text(message.text()),
    }
}

#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Debug, Serialize)]
struct RequestTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> RequestTool<'a> {
    fn new(tool: &'a ToolSchema) -> Self {
        Self {
            kind: "function",
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        }
    }
}

/// The input items of one assistant message: its reasoning items first (each as it
/// came, with its `encrypted_content`), then its text, then its function calls, the
/// order the model produced them in. A reasoning item must be followed by the item
/// it led to, so an assistant message with neither text nor calls sends nothing; a
/// reasoning item without `encrypted_content` cannot be sent back to a stateless
/// conversation (the server kept nothing to look its id up in) and is left out.
fn assistant_items<'a>(message: &'a Message, out: &mut Vec<InputItem<'a>>) {
    let text = message.content.as_deref().filter(|t| !t.is_empty());
    if text.is_none() && message.tool_calls.is_empty() {
        return;
    }
    for part in &message.reasoning {
        if let ReasoningPart::Reasoning {
            id,
            summary,
            encrypted_content: Some(encrypted),
        } = part
        {
            out.push(InputItem::Reasoning {
                kind: "reasoning",
                id,
                summary: summary
                    .iter()
                    .map(|text| SummaryText {
                        kind: "summary_text",
                        text,
                    })
                    .collect(),
                encrypted_content: encrypted,
            });
        }
    }
    if let Some(text) = text {
        out.push(InputItem::Message {
            role: "assistant",
            content: Content::Text(text),
        });
    }
    for call in &message.tool_calls {
        out.push(InputItem::FunctionCall {
            kind: "function_call",
            call_id: call.id.as_str(),
            name: &call.name,
            arguments: &call.arguments,
        });
    }
}

/// The body of a Responses request: system messages become `instructions`, the rest
/// `input` items.
pub(crate) fn request_body(
    request: &ProviderRequest,
    effort: Option<ReasoningEffort>,
    stream: bool,
) -> RequestBody<'_> {
    let mut instructions: Option<String> = None;
    let mut input = Vec::with_capacity(request.messages.len() + 4);
    for message in &request.messages {
        match message.role {
            MessageRole::System => match &mut instructions {
                Some(text) => {
                    text.push_str("\n\n");
                    text.push_str(message.text());
                }
                None => instructions = Some(message.text().to_owned()),
            },
            MessageRole::User => input.push(InputItem::Message {
                role: "user",
                content: content(message),
            }),
            MessageRole::Assistant => assistant_items(message, &mut input),
            MessageRole::Tool => input.push(InputItem::FunctionCallOutput {
                kind: "function_call_output",
                call_id: message
                    .tool_call_id
                    .as_ref()
                    .map(CallId::as_str)
                    .unwrap_or_default(),
                output: content(message),
            }),
        }
    }
    let tools: Vec<RequestTool<'_>> = request.tools.iter().map(RequestTool::new).collect();
    let tool_choice = (!tools.is_empty()).then(|| match &request.tool_choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    });
    let reasoning = effort.is_some() || is_reasoning_model(&request.model);
    RequestBody {
        model: &request.model,
        instructions,
        input,
        tools,
        tool_choice,
        stream,
        store: false,
        include: if reasoning {
            vec![INCLUDE_ENCRYPTED_REASONING]
        } else {
            Vec::new()
        },
        reasoning: effort.map(|effort| ReasoningRequest {
            effort: effort.as_str(),
            summary: "auto",
        }),
        max_output_tokens: request.max_tokens,
        temperature: request.temperature,
    }
}

/// `usage` of a response.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Our [`Usage`].
    pub(crate) fn to_usage(&self) -> Usage {
        let input = self.input_tokens_details.as_ref();
        Usage::new(
            self.input_tokens,
            self.output_tokens,
            input.and_then(|d| d.cached_tokens).unwrap_or(0),
        )
        .with_cache_write_tokens(input.and_then(|d| d.cache_write_tokens).unwrap_or(0))
        .with_reasoning_tokens(
            self.output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        )
    }
}

/// `incomplete_details` of a response.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// The end state of a response: its status, why it is incomplete, its error, usage.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseState {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub error: Option<WireError>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

impl ResponseState {
    /// Why the model stopped: `incomplete` is `Length` (or `ContentFilter` when that
    /// is the reason given); otherwise `ToolCalls` when it called tools.
    pub(crate) fn finish_reason(&self, has_calls: bool) -> FinishReason {
        if self.status.as_deref() == Some("incomplete") {
            return match self
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref())
            {
                Some("content_filter") => FinishReason::ContentFilter,
                _ => FinishReason::Length,
            };
        }
        if has_calls {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        }
    }
}

/// The error a failed response (`response.failed`, an `error` event, a `failed`
/// status) is: classified by its code, named with it. `insufficient_quota` is
/// refused (not retried); `rate_limit_exceeded` is a rate limit; `server_error` a
/// server failure.
pub(crate) fn failure(error: &WireError) -> ProviderError {
    let code = error
        .code
        .as_ref()
        .and_then(Value::as_str)
        .or(error.kind.as_deref())
        .unwrap_or("");
    let status = match code {
        "insufficient_quota" | "rate_limit_exceeded" => Some(429),
        "server_error" => Some(500),
        "invalid_prompt" | "invalid_request_error" => Some(400),
        _ => None,
    };
    let mut named = WireError {
        kind: error.kind.clone(),
        code: error.code.clone(),
        message: error.message.clone(),
        metadata: None,
        details: None,
    };
    if !code.is_empty() {
        named.message = Some(format!(
            "{code}: {}",
            error.message.as_deref().unwrap_or("the response failed")
        ));
    }
    classify(status, None, &named)
}

/// An output item of a whole response (or of `response.output_item.*`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
    #[serde(default)]
    pub summary: Vec<TextPart>,
    #[serde(default)]
    pub encrypted_content: Option<String>,
    /// A message's content parts (`output_text`, `refusal`) or a reasoning item's
    /// raw `reasoning_text` (LM Studio).
    #[serde(default)]
    pub content: Vec<TextPart>,
}

/// A part with text: `summary_text`, `output_text`, `reasoning_text`, `refusal`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TextPart {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub refusal: Option<String>,
}

impl OutputItem {
    /// The reasoning part this `reasoning` item is kept as.
    pub(crate) fn reasoning_part(&self) -> ReasoningPart {
        ReasoningPart::Reasoning {
            id: self.id.clone().unwrap_or_default(),
            summary: self
                .summary
                .iter()
                .filter_map(|part| part.text.clone())
                .collect(),
            encrypted_content: self.encrypted_content.clone(),
        }
    }
}

#[derive(Deserialize)]
struct WholeResponse {
    #[serde(default)]
    output: Vec<OutputItem>,
    #[serde(flatten)]
    state: ResponseState,
}

/// Parses a whole (non-streamed) response.
pub(crate) fn parse_response(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    let response: WholeResponse =
        serde_json::from_slice(body).map_err(|e| ProviderError::Decode {
            what: format!("Responses API response ({e})"),
            excerpt: excerpt(&String::from_utf8_lossy(body)),
        })?;
    if response.state.status.as_deref() == Some("failed") {
        return Err(failure(&response.state.error.unwrap_or_default()));
    }
    let mut text = String::new();
    let mut reasoning_text = String::new();
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut refused = false;
    for item in &response.output {
        match item.kind.as_str() {
            "message" => {
                for part in &item.content {
                    match (part.kind.as_str(), &part.text, &part.refusal) {
                        ("refusal", _, Some(refusal)) => {
                            refused = true;
                            text.push_str(refusal);
                        }
                        (_, Some(piece), _) => text.push_str(piece),
                        _ => {}
                    }
                }
            }
            "reasoning" => {
                let visible = item
                    .summary
                    .iter()
                    .chain(&item.content)
                    .filter_map(|part| part.text.as_deref())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                if !visible.is_empty() {
                    if !reasoning_text.is_empty() {
                        reasoning_text.push_str("\n\n");
                    }
                    reasoning_text.push_str(&visible);
                }
                parts.push(item.reasoning_part());
            }
            "function_call" => calls.push(ToolCall::new(
                CallId::from(item.call_id.clone().unwrap_or_default()),
                item.name.clone().unwrap_or_default(),
                item.arguments.clone().unwrap_or_default(),
            )),
            // Built-in tools (code interpreter, web search, …) run at the provider.
            _ => {}
        }
    }
    let finish_reason = if refused && calls.is_empty() {
        FinishReason::Refusal
    } else {
        response.state.finish_reason(!calls.is_empty())
    };
    let content = if calls.is_empty() || !text.is_empty() {
        Some(text)
    } else {
        None
    };
    Ok(ProviderResponse {
        fallbacks: Vec::new(),
        message: Message::assistant_with_tool_calls(content, calls).with_reasoning(parts),
        finish_reason,
        usage: response
            .state
            .usage
            .as_ref()
            .map(WireUsage::to_usage)
            .unwrap_or_default(),
        reasoning: (!reasoning_text.is_empty()).then_some(reasoning_text),
    })
}

#[cfg(test)]
mod tests;
