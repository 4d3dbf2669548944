//! The Anthropic Messages wire format of responses: whole responses, usage and stop
//! reasons.

use oxydra_types::{CallId, FinishReason, Message, ReasoningPart, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ProviderError;
use crate::http_error::excerpt;
use crate::request::ProviderResponse;

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
    #[serde(default)]
    pub output_tokens_details: Option<OutputDetails>,
}

/// `usage.output_tokens_details`: how many output tokens went to thinking.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default)]
    pub thinking_tokens: Option<u64>,
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
        self.output_tokens_details = newer.output_tokens_details.or(self.output_tokens_details);
    }

    /// Our [`Usage`]: `input_tokens` is the whole prompt (uncached input, cache reads
    /// and cache writes), `cached_tokens` the cache reads, `cache_write_tokens` the
    /// cache writes and `reasoning_tokens` the thinking tokens.
    pub(crate) fn to_usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        let input = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cached)
            .saturating_add(written);
        let thinking = self
            .output_tokens_details
            .and_then(|details| details.thinking_tokens)
            .unwrap_or(0);
        Usage::new(input, self.output_tokens.unwrap_or(0), cached)
            .with_cache_write_tokens(written)
            .with_reasoning_tokens(thinking)
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
    let mut reasoning = Vec::new();
    for block in &response.content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("thinking") => reasoning.push(ReasoningPart::Thinking {
                text: block["thinking"].as_str().unwrap_or_default().to_owned(),
                signature: block["signature"].as_str().unwrap_or_default().to_owned(),
            }),
            Some("redacted_thinking") => {
                let Some(data) = block["data"].as_str() else {
                    return Err(decode_error(
                        "Anthropic redacted_thinking block without data".into(),
                    ));
                };
                reasoning.push(ReasoningPart::RedactedThinking {
                    data: data.to_owned(),
                });
            }
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
            _ => {} // server-tool blocks are not part of the message
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
    let visible: Vec<String> = reasoning
        .iter()
        .map(ReasoningPart::visible_text)
        .filter(|text| !text.is_empty())
        .collect();
    Ok(ProviderResponse {
        fallbacks: Vec::new(),
        message: Message::assistant_with_tool_calls(content, tool_calls).with_reasoning(reasoning),
        finish_reason,
        usage: response.usage.to_usage(),
        reasoning: (!visible.is_empty()).then(|| visible.join("\n\n")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn thinking_blocks_and_cache_usage_of_a_whole_response() {
        let body = br#"{"content":[{"type":"thinking","thinking":"plan","signature":"sig=="},
            {"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"ok"}],
            "stop_reason":"end_turn","usage":{"input_tokens":4,"cache_read_input_tokens":100,
            "cache_creation_input_tokens":50,"output_tokens":30,
            "output_tokens_details":{"thinking_tokens":20}}}"#;
        let response = parse_response(body).unwrap();
        assert_eq!(
            response.message.reasoning,
            vec![
                ReasoningPart::Thinking {
                    text: "plan".into(),
                    signature: "sig==".into()
                },
                ReasoningPart::RedactedThinking {
                    data: "EmwK".into()
                }
            ]
        );
        assert_eq!(response.reasoning.as_deref(), Some("plan"));
        assert_eq!(
            response.usage,
            Usage::new(154, 30, 100)
                .with_cache_write_tokens(50)
                .with_reasoning_tokens(20)
        );
        assert_eq!(response.usage.uncached_input_tokens(), 4);
        let bad = br#"{"content":[{"type":"redacted_thinking"}]}"#;
        assert!(matches!(
            parse_response(bad),
            Err(ProviderError::Decode { .. })
        ));
    }
}
