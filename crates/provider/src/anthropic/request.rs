//! Messages request bodies: the conversation as content blocks, extended thinking and
//! prompt-cache breakpoints.

use oxydra_types::{CallId, ContentPart, Message, MessageRole, ReasoningPart, ToolCall};
use serde_json::{Map, Value, json};

use crate::error::ProviderError;
use crate::http_error::object;
use crate::parts::{self, parse_data_url};
use crate::request::{ProviderRequest, ToolChoice};

/// `max_tokens` sent when the request names none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4_096;

/// The smallest thinking budget the API accepts.
pub const ANTHROPIC_MIN_THINKING_BUDGET: u32 = 1_024;

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

/// The assistant's reasoning blocks that Anthropic made, exactly as received; parts
/// of other providers are left out.
fn reasoning_blocks(message: &Message) -> impl Iterator<Item = Value> + '_ {
    message.reasoning.iter().filter_map(|part| match part {
        ReasoningPart::Thinking { text, signature } => Some(json!({
            "type": "thinking",
            "thinking": text,
            "signature": signature,
        })),
        ReasoningPart::RedactedThinking { data } => Some(json!({
            "type": "redacted_thinking",
            "data": data,
        })),
        ReasoningPart::Reasoning { .. } | ReasoningPart::ThoughtSignature { .. } => None,
    })
}

/// A part as a content block: an `image` block with a `base64` source (its bytes, or
/// those of its `data:` URL) or a `url` source, or a `document` block with a `base64`
/// PDF source, titled with the file's name when known.
fn part_block(part: &ContentPart) -> Value {
    let base64_image = |media_type: &str, data: &str| {
        json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        })
    };
    match part {
        ContentPart::Image { media_type, data } => base64_image(media_type, data),
        ContentPart::ImageUrl { url } => match parse_data_url(url) {
            Some((media_type, data)) => base64_image(media_type, data),
            None => json!({"type": "image", "source": {"type": "url", "url": url}}),
        },
        ContentPart::Document {
            media_type,
            data,
            name,
        } => {
            let mut block = object(json!({
                "type": "document",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }));
            if let Some(name) = name {
                block.insert("title".into(), json!(name));
            }
            Value::Object(block)
        }
    }
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
                let mut blocks = if text.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "text", "text": text})]
                };
                blocks.extend(message.parts.iter().map(part_block));
                push_blocks(&mut wire, "user", blocks);
            }
            MessageRole::Assistant => {
                // Thinking comes first, as the model produced it: the API refuses a
                // tool-use turn whose thinking was dropped, moved or altered.
                let mut blocks: Vec<Value> = reasoning_blocks(message).collect();
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
                }));
                // An empty text block is refused; an empty result is sent without content.
                // A result with parts sends a list of blocks: its text, then its parts.
                if !message.parts.is_empty() {
                    let mut content = Vec::with_capacity(message.parts.len() + 1);
                    if !message.text().trim().is_empty() {
                        content.push(json!({"type": "text", "text": message.text()}));
                    }
                    content.extend(message.parts.iter().map(part_block));
                    block.insert("content".into(), Value::Array(content));
                } else if !message.text().is_empty() {
                    block.insert("content".into(), json!(message.text()));
                }
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

/// The cache breakpoint marker.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Marks the last block of the newest message as a cache breakpoint, so that the next
/// request (which repeats this conversation and adds to it) reads all of it from the
/// cache. Thinking blocks cannot carry a breakpoint: the last other block does.
fn mark_newest_message(messages: &mut [Value]) {
    let Some(content) = messages
        .last_mut()
        .and_then(|message| message.get_mut("content"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let cacheable = content.iter_mut().rev().find(|block| {
        !matches!(
            block.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    });
    if let Some(Value::Object(block)) = cacheable {
        block.insert("cache_control".into(), ephemeral());
    }
}

/// Checks a thinking budget the way the API would, before anything is sent.
pub(crate) fn check_thinking_budget(budget: u32) -> Result<(), ProviderError> {
    if budget < ANTHROPIC_MIN_THINKING_BUDGET {
        return Err(ProviderError::InvalidConfig {
            what: "thinking budget".into(),
            message: format!(
                "{budget} tokens is below Anthropic's minimum of {ANTHROPIC_MIN_THINKING_BUDGET}"
            ),
        });
    }
    Ok(())
}

/// The JSON body of a Messages request.
///
/// With a `thinking_budget`, extended thinking is enabled (`max_tokens` is raised above
/// the budget when needed, within the model's largest output, and `temperature` is left
/// out, as the API demands); a request that forces a tool (`tool_choice` `any` or
/// `tool`, which thinking does not allow) is sent without thinking. Cache breakpoints
/// (`cache_control: ephemeral`) go on the last tool, the system prompt and the newest
/// message: three of the four the API allows.
pub(crate) fn request_body(
    request: &ProviderRequest,
    stream: bool,
    thinking_budget: Option<u32>,
) -> Result<Value, ProviderError> {
    parts::check("anthropic", &parts::ANTHROPIC, &request.messages)?;
    let forced_tool = matches!(
        request.tool_choice,
        ToolChoice::Required | ToolChoice::Tool(_)
    ) && !request.tools.is_empty();
    let thinking = match thinking_budget {
        Some(budget) => {
            check_thinking_budget(budget)?;
            (!forced_tool).then_some(budget)
        }
        None => None,
    };
    let (system, mut messages) = messages_to_wire(&request.messages);
    mark_newest_message(&mut messages);
    let mut max_tokens = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(budget) = thinking
        && max_tokens <= budget
    {
        // Room for the answer after the thinking, within what the model can write.
        let ceiling = super::max_output(&request.model).max(budget.saturating_add(1));
        max_tokens = budget.saturating_add(DEFAULT_MAX_TOKENS).min(ceiling);
    }
    let mut body = object(json!({
        "model": request.model,
        "max_tokens": max_tokens,
    }));
    if stream {
        body.insert("stream".into(), json!(true));
    }
    if let Some(budget) = thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools(request)));
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(system) = system {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": system, "cache_control": ephemeral()}]),
        );
    }
    body.insert("messages".into(), Value::Array(messages));
    Ok(Value::Object(body))
}

/// The tool definitions, the last one marked as a cache breakpoint (which caches them
/// all).
fn tools(request: &ProviderRequest) -> Vec<Value> {
    let count = request.tools.len();
    request
        .tools
        .iter()
        .enumerate()
        .map(|(at, tool)| {
            let mut wire = Map::new();
            wire.insert("name".into(), json!(tool.name));
            wire.insert("description".into(), json!(tool.description));
            wire.insert("input_schema".into(), tool.parameters.clone());
            if at + 1 == count {
                wire.insert("cache_control".into(), ephemeral());
            }
            Value::Object(wire)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::ToolSchema;

    fn body(request: &ProviderRequest, budget: Option<u32>) -> Value {
        request_body(request, true, budget).unwrap()
    }

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
        let body = body(&request, None);
        assert_eq!(body["system"][0]["text"], "be brief\n\nsummary");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert!(body.get("thinking").is_none());
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
        // Only the newest block is a breakpoint.
        assert_eq!(results[2]["cache_control"]["type"], "ephemeral");
        assert!(results[1].get("cache_control").is_none());
    }

    #[test]
    fn thinking_goes_back_first_and_unchanged() {
        let thinking = ReasoningPart::Thinking {
            text: "hmm \u{2014} \"quoted\"\n".into(),
            signature: "EoQD+/==".into(),
        };
        let redacted = ReasoningPart::RedactedThinking {
            data: "EmwK".into(),
        };
        let foreign = ReasoningPart::ThoughtSignature {
            call_id: None,
            signature: "gemini".into(),
        };
        let assistant = Message::assistant_with_tool_calls(
            Some("calling".into()),
            vec![ToolCall::new(CallId::from("toolu_1"), "f", "")],
        )
        .with_reasoning(vec![thinking, redacted, foreign]);
        let request = ProviderRequest::new(
            "claude-haiku-4-5",
            vec![
                Message::user("go"),
                assistant,
                Message::tool_result(CallId::from("toolu_1"), "f", "1.0"),
            ],
        );
        let body = body(&request, Some(2_048));
        let blocks = body["messages"][1]["content"].as_array().unwrap();
        let kinds: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "redacted_thinking", "text", "tool_use"]);
        assert_eq!(blocks[0]["thinking"], "hmm \u{2014} \"quoted\"\n");
        assert_eq!(blocks[0]["signature"], "EoQD+/==");
        assert_eq!(blocks[1]["data"], "EmwK");
        assert!(blocks.iter().all(|b| b.get("cache_control").is_none()));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert!(body["max_tokens"].as_u64().unwrap() > 2_048);
    }

    #[test]
    fn thinking_rules_of_the_api_are_kept() {
        let mut request = ProviderRequest::new("claude-sonnet-4-5", vec![Message::user("hi")]);
        request.temperature = Some(0.2);
        request.max_tokens = Some(20_000);
        let with = body(&request, Some(8_000));
        assert!(with.get("temperature").is_none());
        assert_eq!(with["max_tokens"], 20_000);
        let without = body(&request, None);
        assert!((without["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
        assert!(matches!(
            request_body(&request, false, Some(1_023)),
            Err(ProviderError::InvalidConfig { .. })
        ));
        request.max_tokens = None;
        let near_limit = body(&request, Some(63_000));
        assert_eq!(
            near_limit["max_tokens"], 64_000,
            "capped at the model's output"
        );
        request.tools = vec![ToolSchema::new("f", "d", json!({"type": "object"}))];
        request.tool_choice = ToolChoice::Required;
        let forced = body(&request, Some(8_000));
        assert!(forced.get("thinking").is_none());
        assert_eq!(forced["tool_choice"]["type"], "any");
    }

    #[test]
    fn breakpoints_skip_thinking_and_mark_the_last_tool() {
        let request = ProviderRequest {
            tools: vec![
                ToolSchema::new("a", "d", json!({"type": "object"})),
                ToolSchema::new("b", "d", json!({"type": "object"})),
            ],
            ..ProviderRequest::new(
                "claude-sonnet-4-5",
                vec![
                    Message::user("go"),
                    Message::assistant("done").with_reasoning(vec![ReasoningPart::Thinking {
                        text: "t".into(),
                        signature: "s".into(),
                    }]),
                ],
            )
        };
        let body = body(&request, None);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        let last = body["messages"][1]["content"].as_array().unwrap();
        assert!(last[0].get("cache_control").is_none());
        assert_eq!(last[1]["cache_control"]["type"], "ephemeral");
        assert!(body.get("system").is_none());
    }

    #[test]
    fn empty_texts_never_become_blocks() {
        let request = ProviderRequest::new(
            "claude-sonnet-4-5",
            vec![
                Message::user("go"),
                Message::assistant_with_tool_calls(
                    Some("  ".into()),
                    vec![ToolCall::new(CallId::from("t"), "f", "{}")],
                ),
                Message::tool_result(CallId::from("t"), "f", ""),
            ],
        );
        let body = body(&request, None);
        let assistant = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(assistant.len(), 1);
        assert!(body["messages"][2]["content"][0].get("content").is_none());
    }
}
