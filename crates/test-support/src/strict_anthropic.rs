//! The request checks of the Anthropic Messages API: what it answers 400 to.
//!
//! Each rule is one the real API enforces: `max_tokens` is required; user and
//! assistant turns alternate, starting with the user; text blocks are never empty; a
//! user message's `tool_result` blocks answer exactly the `tool_use` ids of the
//! assistant message right before it; at most four blocks carry `cache_control`; image
//! and document blocks are well formed, within 5 MB per image and 100 per request, in
//! user content and in `tool_result` content
//! ([`check_anthropic_block`](crate::strict_parts::check_anthropic_block)); and with
//! extended thinking on, the budget is at least 1024 and below `max_tokens`, no
//! `temperature` is sent, no tool is forced, and the assistant turn a tool result
//! answers starts with its thinking block, sent back exactly as the server produced
//! it (the signature covers the thinking text).

use serde_json::Value;

use crate::strict_parts::{ANTHROPIC_MAX_MEDIA, check_anthropic_block};

/// Most `cache_control` breakpoints one request may carry.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// A thinking block the server produced: its text and signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedThinking {
    /// The thinking text, every `thinking_delta` joined.
    pub thinking: String,
    /// The signature, every `signature_delta` joined.
    pub signature: String,
}

/// The thinking blocks in a streamed Messages body (SSE), in order; nothing for a
/// body that is not a Messages stream.
pub fn issued_thinking(body: &[u8]) -> Vec<IssuedThinking> {
    let text = String::from_utf8_lossy(body);
    let mut open: Vec<(u64, IssuedThinking)> = Vec::new();
    let mut done = Vec::new();
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("content_block_start")
                if event.pointer("/content_block/type").and_then(Value::as_str)
                    == Some("thinking") =>
            {
                let field = |name: &str| {
                    event
                        .pointer(&format!("/content_block/{name}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                open.push((
                    index,
                    IssuedThinking {
                        thinking: field("thinking"),
                        signature: field("signature"),
                    },
                ));
            }
            Some("content_block_delta") => {
                let Some((_, block)) = open.iter_mut().find(|(at, _)| *at == index) else {
                    continue;
                };
                let piece = |name: &str| {
                    event
                        .pointer(&format!("/delta/{name}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match event.pointer("/delta/type").and_then(Value::as_str) {
                    Some("thinking_delta") => block.thinking.push_str(&piece("thinking")),
                    Some("signature_delta") => block.signature.push_str(&piece("signature")),
                    _ => {}
                }
            }
            Some("content_block_stop") => {
                if let Some(at) = open.iter().position(|(open_at, _)| *open_at == index) {
                    done.push(open.remove(at).1);
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_iter().map(|(_, block)| block));
    done
}

fn blocks(message: &Value) -> Vec<&Value> {
    match message.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        _ => Vec::new(),
    }
}

fn kind(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

fn cache_breakpoints(value: Option<&Value>) -> usize {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter(|item| item.get("cache_control").is_some())
            .count(),
        _ => 0,
    }
}

/// Checks a Messages request body as the Anthropic API does; `issued` are the
/// thinking blocks the server produced so far (a thinking block sent back that is
/// not one of them was altered). The error says what is wrong, like the API's.
pub fn validate_anthropic_request(body: &Value, issued: &[IssuedThinking]) -> Result<(), String> {
    let max_tokens = body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or("max_tokens: Field required")?;
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or("messages: at least one message is required")?;
    let thinking = body.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled");
    if thinking {
        let budget = body
            .pointer("/thinking/budget_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if budget < 1024 {
            return Err(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        if budget >= max_tokens {
            return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
        }
        if body
            .get("temperature")
            .and_then(Value::as_f64)
            .is_some_and(|t| (t - 1.0).abs() > f64::EPSILON)
        {
            return Err("`temperature` may only be set to 1 when thinking is enabled".into());
        }
        if matches!(
            body.pointer("/tool_choice/type").and_then(Value::as_str),
            Some("any" | "tool")
        ) {
            return Err("Thinking may not be enabled when tool_choice forces tool use.".into());
        }
    }
    let breakpoints = cache_breakpoints(body.get("tools"))
        + cache_breakpoints(body.get("system"))
        + messages
            .iter()
            .map(|m| cache_breakpoints(m.get("content")))
            .sum::<usize>();
    if breakpoints > MAX_CACHE_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    let mut previous_calls: Vec<&str> = Vec::new();
    let mut previous_role = "";
    let mut media = 0usize;
    for (at, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match (at, role) {
            (0, "user") => {}
            (0, _) => return Err("messages: the first message must use the \"user\" role".into()),
            (_, "user" | "assistant") if role != previous_role => {}
            _ => {
                return Err(format!(
                    "messages.{at}: roles must alternate between \"user\" and \"assistant\""
                ));
            }
        }
        let content = blocks(message);
        if content.is_empty()
            && message
                .get("content")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            return Err(format!(
                "messages.{at}: all messages must have non-empty content"
            ));
        }
        for (block_at, block) in content.iter().enumerate() {
            let path = format!("messages.{at}.content.{block_at}");
            if check_anthropic_block(block, &path)? {
                media += 1;
            }
            if kind(block) == "tool_result"
                && let Some(Value::Array(inner)) = block.get("content")
            {
                for (inner_at, inner_block) in inner.iter().enumerate() {
                    let inner_path = format!("{path}.tool_result.content.{inner_at}");
                    match kind(inner_block) {
                        "text" | "image" | "document" | "search_result" => {}
                        other => {
                            return Err(format!(
                                "{inner_path}.type: Input tag '{other}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'"
                            ));
                        }
                    }
                    if check_anthropic_block(inner_block, &inner_path)? {
                        media += 1;
                    }
                    if kind(inner_block) == "text"
                        && inner_block
                            .get("text")
                            .and_then(Value::as_str)
                            .is_none_or(|t| t.trim().is_empty())
                    {
                        return Err(format!(
                            "{inner_path}.text: text content blocks must contain non-whitespace text"
                        ));
                    }
                }
            }
            if media > ANTHROPIC_MAX_MEDIA {
                return Err(format!(
                    "messages: too many images and documents: {media} > {ANTHROPIC_MAX_MEDIA}"
                ));
            }
            if kind(block) == "text"
                && block
                    .get("text")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t.trim().is_empty())
            {
                return Err(format!(
                    "messages.{at}.content.{block_at}.text: text content blocks must contain non-whitespace text"
                ));
            }
        }
        if role == "user" {
            let answered: Vec<&str> = content
                .iter()
                .filter(|b| kind(b) == "tool_result")
                .map(|b| b.get("tool_use_id").and_then(Value::as_str).unwrap_or(""))
                .collect();
            if let Some(stray) = answered.iter().find(|id| !previous_calls.contains(id)) {
                return Err(format!(
                    "messages.{at}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ));
            }
            if let Some(missing) = previous_calls.iter().find(|id| !answered.contains(id)) {
                return Err(format!(
                    "messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing}"
                ));
            }
            previous_calls.clear();
        } else {
            previous_calls = content
                .iter()
                .filter(|b| kind(b) == "tool_use")
                .map(|b| b.get("id").and_then(Value::as_str).unwrap_or(""))
                .collect();
            check_assistant_thinking(at, &content, issued)?;
        }
        previous_role = role;
    }
    if thinking {
        check_tool_loop_keeps_thinking(messages)?;
    }
    Ok(())
}

/// Thinking blocks come first in an assistant message, and each is one the server
/// produced, unchanged.
fn check_assistant_thinking(
    at: usize,
    content: &[&Value],
    issued: &[IssuedThinking],
) -> Result<(), String> {
    let mut seen_other = false;
    for (block_at, block) in content.iter().enumerate() {
        match kind(block) {
            "thinking" => {
                if seen_other {
                    return Err(format!(
                        "messages.{at}.content.{block_at}: thinking blocks must come before text and tool_use blocks"
                    ));
                }
                let sent = IssuedThinking {
                    thinking: block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    signature: block
                        .get("signature")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                };
                if !issued.contains(&sent) {
                    return Err(format!(
                        "messages.{at}.content.{block_at}: Invalid `signature` in `thinking` block"
                    ));
                }
            }
            "redacted_thinking" => {
                if seen_other {
                    return Err(format!(
                        "messages.{at}.content.{block_at}: thinking blocks must come before text and tool_use blocks"
                    ));
                }
                if block
                    .get("data")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    return Err(format!(
                        "messages.{at}.content.{block_at}.data: Field required"
                    ));
                }
            }
            _ => seen_other = true,
        }
    }
    Ok(())
}

/// With thinking on, the assistant turn whose tool calls the last user message
/// answers must start with a thinking block.
fn check_tool_loop_keeps_thinking(messages: &[Value]) -> Result<(), String> {
    let Some(last) = messages.last() else {
        return Ok(());
    };
    let answers_tools = blocks(last).iter().any(|b| kind(b) == "tool_result");
    if !answers_tools || messages.len() < 2 {
        return Ok(());
    }
    let assistant_at = messages.len() - 2;
    let starts_with_thinking = messages
        .get(assistant_at)
        .map(blocks)
        .and_then(|content| content.first().map(|b| kind(b).to_owned()))
        .is_some_and(|first| first == "thinking" || first == "redacted_thinking");
    if starts_with_thinking {
        Ok(())
    } else {
        Err(format!(
            "messages.{assistant_at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
            messages
                .get(assistant_at)
                .map(blocks)
                .and_then(|content| content.first().map(|b| kind(b).to_owned()))
                .unwrap_or_default()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issued() -> Vec<IssuedThinking> {
        vec![IssuedThinking {
            thinking: "plan".into(),
            signature: "sig".into(),
        }]
    }

    fn good() -> Value {
        json!({
            "model": "claude-haiku-4-5", "max_tokens": 8192,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1"}]}
            ]
        })
    }

    #[test]
    fn a_well_formed_thinking_tool_loop_passes() {
        validate_anthropic_request(&good(), &issued()).unwrap();
    }

    #[test]
    fn what_the_api_refuses_is_refused() {
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "max_tokens",
                Box::new(|b| {
                    b.as_object_mut().unwrap().remove("max_tokens");
                }),
            ),
            (
                "Invalid `signature`",
                Box::new(|b| b["messages"][1]["content"][0]["thinking"] = json!("plan!")),
            ),
            (
                "Expected `thinking`",
                Box::new(|b| {
                    b["messages"][1]["content"]
                        .as_array_mut()
                        .unwrap()
                        .remove(0);
                }),
            ),
            (
                "unexpected `tool_use_id`",
                Box::new(|b| b["messages"][2]["content"][0]["tool_use_id"] = json!("t9")),
            ),
            (
                "non-whitespace",
                Box::new(|b| b["messages"][0]["content"][0]["text"] = json!(" ")),
            ),
            (
                "budget_tokens",
                Box::new(|b| b["thinking"]["budget_tokens"] = json!(1000)),
            ),
            ("greater than", Box::new(|b| b["max_tokens"] = json!(2048))),
            ("temperature", Box::new(|b| b["temperature"] = json!(0.5))),
            (
                "alternate",
                Box::new(|b| {
                    b["messages"]
                        .as_array_mut()
                        .unwrap()
                        .insert(1, json!({"role":"user","content":"x"}));
                }),
            ),
            (
                "maximum of 4",
                Box::new(|b| {
                    for message in b["messages"].as_array_mut().unwrap() {
                        for block in message["content"].as_array_mut().unwrap() {
                            block["cache_control"] = json!({"type": "ephemeral"});
                        }
                    }
                    b["system"] =
                        json!([{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]);
                }),
            ),
            (
                "before text",
                Box::new(|b| {
                    let blocks = b["messages"][1]["content"].as_array_mut().unwrap();
                    blocks.reverse();
                }),
            ),
        ];
        for (expected, change) in cases {
            let mut body = good();
            change(&mut body);
            let error = validate_anthropic_request(&body, &issued()).unwrap_err();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn thinking_is_read_from_a_recorded_stream() {
        let blocks = issued_thinking(&crate::fixture(
            "anthropic/haiku45_thinking_then_tool_use.sse",
        ));
        assert_eq!(blocks.len(), 1);
        assert!(
            blocks[0]
                .thinking
                .starts_with("The user wants me to:\n1. Use")
        );
        assert!(blocks[0].signature.starts_with("EoQDCm0I"));
        assert!(issued_thinking(b"not a stream").is_empty());
    }
}
