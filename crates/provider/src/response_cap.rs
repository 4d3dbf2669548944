//! Keeping one response within [`ProviderConfig::max_response_bytes`]: what counts
//! toward the cap, and reading a body no further than it.
//!
//! [`ProviderConfig::max_response_bytes`]: crate::ProviderConfig::max_response_bytes

use oxydra_types::{Message, ReasoningPart, StreamItem};

use crate::error::ProviderError;

/// What [`ResponseCap`] counts, as the error names it.
pub(crate) const TEXT_AND_CALLS: &str = "bytes of text, reasoning and tool calls";

/// The most tool calls one response may hold (by index): far more than any model
/// asks for at once, few enough that assembling them stays cheap.
pub(crate) const MAX_TOOL_CALLS: u32 = 1024;

/// What a tool-call delta costs beside its strings, so that a stream of empty deltas
/// also meets the cap.
const DELTA_OVERHEAD: usize = 16;

/// The bytes of `item` that stay in the response: text, reasoning, and a tool call's id, name
/// and argument fragment (plus a small fixed cost per fragment).
pub(crate) fn item_bytes(item: &StreamItem) -> usize {
    match item {
        StreamItem::Text(text) | StreamItem::Reasoning(text) => text.len(),
        StreamItem::ToolCallDelta(delta) => delta
            .arguments
            .len()
            .saturating_add(DELTA_OVERHEAD)
            .saturating_add(delta.name.as_ref().map_or(0, String::len))
            .saturating_add(delta.id.as_ref().map_or(0, |id| id.as_str().len())),
        StreamItem::ReasoningPart(part) => reasoning_part_bytes(part),
        StreamItem::Usage(_)
        | StreamItem::Finish(_)
        | StreamItem::Progress(_)
        | StreamItem::Event(_) => 0,
    }
}

/// The bytes of a reasoning part's texts and opaque blobs.
fn reasoning_part_bytes(part: &ReasoningPart) -> usize {
    match part {
        ReasoningPart::Thinking { text, signature } => text.len().saturating_add(signature.len()),
        ReasoningPart::RedactedThinking { data } => data.len(),
        ReasoningPart::Reasoning {
            id,
            summary,
            encrypted_content,
        } => summary.iter().fold(
            id.len()
                .saturating_add(encrypted_content.as_ref().map_or(0, String::len)),
            |total, text| total.saturating_add(text.len()),
        ),
        ReasoningPart::ThoughtSignature { signature, .. } => signature.len(),
    }
}

/// The bytes of a whole response message that count toward the cap.
pub(crate) fn message_bytes(message: &Message) -> usize {
    let reasoning = message.reasoning.iter().fold(0usize, |total, part| {
        total.saturating_add(reasoning_part_bytes(part))
    });
    message.tool_calls.iter().fold(
        message
            .content
            .as_ref()
            .map_or(0, String::len)
            .saturating_add(reasoning),
        |total, call| {
            total
                .saturating_add(call.arguments.len())
                .saturating_add(call.name.len())
                .saturating_add(call.id.as_str().len())
        },
    )
}

/// Counts the bytes of a streamed response against its cap.
#[derive(Debug)]
pub(crate) struct ResponseCap {
    limit: usize,
    used: usize,
}

impl ResponseCap {
    /// A cap of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self { limit, used: 0 }
    }

    /// Counts `item`; fails once the response has passed the cap, or a tool call's
    /// index reaches [`MAX_TOOL_CALLS`].
    pub fn take(&mut self, item: &StreamItem) -> Result<(), ProviderError> {
        if let StreamItem::ToolCallDelta(delta) = item
            && delta.index >= MAX_TOOL_CALLS
        {
            return Err(too_large(MAX_TOOL_CALLS as usize, "tool calls"));
        }
        self.used = self.used.saturating_add(item_bytes(item));
        if self.used > self.limit {
            return Err(too_large(self.limit, TEXT_AND_CALLS));
        }
        Ok(())
    }
}

/// The error for a response that passed `limit` in `what`.
pub(crate) fn too_large(limit: usize, what: &'static str) -> ProviderError {
    ProviderError::ResponseTooLarge { limit, what }
}

/// Reads `response`'s body chunk by chunk, failing once it passes `limit` bytes.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Result<Vec<u8>, ProviderError>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len().saturating_add(chunk.len()) > limit {
            return Ok(Err(too_large(limit, "bytes of body")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Ok(body))
}

#[cfg(test)]
mod tests {
    use oxydra_types::{CallId, FinishReason, ToolCall, ToolCallDelta, Usage};

    use super::*;

    fn delta(index: u32) -> StreamItem {
        StreamItem::ToolCallDelta(ToolCallDelta {
            index,
            id: None,
            name: None,
            arguments: String::new(),
        })
    }

    #[test]
    fn text_and_calls_count_and_the_rest_does_not() {
        let mut cap = ResponseCap::new(10);
        cap.take(&StreamItem::Text("12345".into())).unwrap();
        cap.take(&StreamItem::Usage(Usage::new(1_000, 1_000, 0)))
            .unwrap();
        cap.take(&StreamItem::Finish(FinishReason::Stop)).unwrap();
        let mut calls = ResponseCap::new(5 + DELTA_OVERHEAD + 5);
        calls.take(&StreamItem::Text("12345".into())).unwrap();
        calls
            .take(&StreamItem::ToolCallDelta(ToolCallDelta {
                index: 0,
                id: Some(CallId::from("ab")),
                name: Some("cd".into()),
                arguments: "e".into(),
            }))
            .unwrap();
        let error = cap.take(&StreamItem::Text("123456".into())).unwrap_err();
        assert!(matches!(
            error,
            ProviderError::ResponseTooLarge { limit: 10, .. }
        ));
        assert!(error.to_string().contains("exceeded 10 bytes"), "{error}");
        let error = calls.take(&delta(1)).unwrap_err();
        assert!(matches!(error, ProviderError::ResponseTooLarge { .. }));

        // Empty deltas cost something, and an index past the limit is refused.
        let mut empty = ResponseCap::new(1_000);
        let taken = (0..1_000)
            .take_while(|_| empty.take(&delta(0)).is_ok())
            .count();
        assert_eq!(taken, 1_000 / DELTA_OVERHEAD);
        let error = ResponseCap::new(1_000)
            .take(&delta(MAX_TOOL_CALLS))
            .unwrap_err();
        assert!(
            error.to_string().contains("exceeded 1024 tool calls"),
            "{error}"
        );

        let message = Message::assistant_with_tool_calls(
            Some("abc".into()),
            vec![ToolCall::new(CallId::from("id"), "name", "{}")],
        );
        assert_eq!(message_bytes(&message), 3 + 2 + 4 + 2);
    }
}
