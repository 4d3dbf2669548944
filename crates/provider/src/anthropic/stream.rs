//! Decoding Anthropic Messages stream events.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use oxydra_types::{CallId, FinishReason, ReasoningPart, StreamItem, ToolCallDelta};
use serde::Deserialize;

use super::wire::{WireUsage, finish_reason};
use crate::error::ProviderError;
use crate::http_error::{WireError, classify, excerpt};
use crate::sse::SseEvent;
use crate::transport::EventDecoder;

/// Any stream event, reading only the fields we use.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default, borrow)]
    content_block: Option<ContentBlock<'a>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// Decodes an Anthropic Messages SSE stream into stream items.
///
/// `tool_use` blocks become tool-call deltas numbered in order of appearance (0, 1, …),
/// whatever their content-block index; `input_json_delta` fragments are handed on
/// raw. A `thinking` block's `thinking_delta`s are handed on as reasoning text as they
/// come; at its `content_block_stop` the whole block (text and `signature_delta`) is
/// yielded as a [`ReasoningPart::Thinking`], and a `redacted_thinking` block (its
/// `data` arrives whole in `content_block_start`) as a
/// [`ReasoningPart::RedactedThinking`]. Usage from `message_start` and
/// `message_delta` is merged and yielded, with the finish reason, at `message_stop`.
/// An `error` event fails the stream.
#[derive(Debug, Default)]
pub struct AnthropicStreamDecoder {
    tool_index: HashMap<u32, u32>,
    /// Reasoning blocks still open, by content-block index.
    reasoning: HashMap<u32, ReasoningPart>,
    usage: WireUsage,
    stop_reason: Option<FinishReason>,
    done: bool,
}

impl AnthropicStreamDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one event's `data` payload, pushing the items it yields onto `out`.
    pub fn decode_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let event: Event<'_> = serde_json::from_str(data).map_err(|e| ProviderError::Decode {
            what: format!("Anthropic stream event ({e})"),
            excerpt: excerpt(data),
        })?;
        match event.kind.as_ref() {
            "message_start" => {
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    self.usage.merge(&usage);
                }
            }
            "content_block_start" => {
                let Some(block) = event.content_block else {
                    return Err(missing("content_block_start without content_block", data));
                };
                match block.kind.as_ref() {
                    "text" => {
                        if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                            out.push_back(StreamItem::Text(text.into_owned()));
                        }
                    }
                    "tool_use" => {
                        let block_index = event.index.unwrap_or(0);
                        let tool_index = u32::try_from(self.tool_index.len()).unwrap_or(u32::MAX);
                        self.tool_index.insert(block_index, tool_index);
                        out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                            index: tool_index,
                            id: block.id.map(|id| CallId::from(id.into_owned())),
                            name: block.name.map(Cow::into_owned),
                            arguments: String::new(),
                        }));
                    }
                    "thinking" => {
                        let text = block.thinking.map(Cow::into_owned).unwrap_or_default();
                        if !text.is_empty() {
                            out.push_back(StreamItem::Reasoning(text.clone()));
                        }
                        let signature = block.signature.map(Cow::into_owned).unwrap_or_default();
                        self.reasoning.insert(
                            event.index.unwrap_or(0),
                            ReasoningPart::Thinking { text, signature },
                        );
                    }
                    "redacted_thinking" => {
                        let Some(blob) = block.data else {
                            return Err(missing("redacted_thinking block without data", data));
                        };
                        self.reasoning.insert(
                            event.index.unwrap_or(0),
                            ReasoningPart::RedactedThinking {
                                data: blob.into_owned(),
                            },
                        );
                    }
                    _ => {} // server tools: not part of our message
                }
            }
            "content_block_delta" => {
                let Some(delta) = event.delta else {
                    return Err(missing("content_block_delta without delta", data));
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                            out.push_back(StreamItem::Text(text.into_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        let block_index = event.index.unwrap_or(0);
                        let Some(&index) = self.tool_index.get(&block_index) else {
                            return Err(missing(
                                "input_json_delta for a block that is not a tool_use",
                                data,
                            ));
                        };
                        out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                            index,
                            id: None,
                            name: None,
                            arguments: delta.partial_json.map(Cow::into_owned).unwrap_or_default(),
                        }));
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        let block_index = event.index.unwrap_or(0);
                        let Some(ReasoningPart::Thinking { text, signature }) =
                            self.reasoning.get_mut(&block_index)
                        else {
                            return Err(missing(
                                "a thinking delta for a block that is not a thinking block",
                                data,
                            ));
                        };
                        if kind == "thinking_delta" {
                            let piece = delta.thinking.unwrap_or_default();
                            if !piece.is_empty() {
                                text.push_str(&piece);
                                out.push_back(StreamItem::Reasoning(piece.into_owned()));
                            }
                        } else {
                            signature.push_str(&delta.signature.unwrap_or_default());
                        }
                    }
                    _ => {} // citations and delta types added later
                }
            }
            "content_block_stop" => {
                if let Some(part) = self.reasoning.remove(&event.index.unwrap_or(0)) {
                    out.push_back(StreamItem::ReasoningPart(part));
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(finish_reason(&reason));
                }
                if let Some(usage) = event.usage {
                    self.usage.merge(&usage);
                }
            }
            "message_stop" => {
                self.done = true;
                // A block the server never closed is still the model's: keep it, in order.
                let mut open: Vec<(u32, ReasoningPart)> = self.reasoning.drain().collect();
                open.sort_by_key(|(index, _)| *index);
                out.extend(
                    open.into_iter()
                        .map(|(_, part)| StreamItem::ReasoningPart(part)),
                );
                out.push_back(StreamItem::Usage(self.usage.to_usage()));
                let reason = self
                    .stop_reason
                    .take()
                    .unwrap_or(if self.tool_index.is_empty() {
                        FinishReason::Stop
                    } else {
                        FinishReason::ToolCalls
                    });
                out.push_back(StreamItem::Finish(reason));
            }
            "error" => {
                return Err(classify(None, None, &event.error.unwrap_or_default()));
            }
            _ => {} // ping and event types added later
        }
        Ok(())
    }
}

fn missing(what: &str, data: &str) -> ProviderError {
    ProviderError::Decode {
        what: what.to_owned(),
        excerpt: excerpt(data),
    }
}

impl EventDecoder for AnthropicStreamDecoder {
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        self.decode_data(&event.data, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_marker(&self) -> &'static str {
        "message_stop"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_event_inside_a_stream_is_classified() {
        let mut decoder = AnthropicStreamDecoder::new();
        let error = decoder
            .decode_data(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(
            matches!(error, ProviderError::Overloaded { message, .. } if message == "Overloaded")
        );
    }

    #[test]
    fn json_delta_for_unknown_block_is_a_decode_error() {
        let mut decoder = AnthropicStreamDecoder::new();
        let error = decoder
            .decode_data(
                r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(matches!(error, ProviderError::Decode { .. }));
    }

    fn decode_all(events: &[&str]) -> Result<Vec<StreamItem>, ProviderError> {
        let mut decoder = AnthropicStreamDecoder::new();
        let mut out = VecDeque::new();
        for event in events {
            decoder.decode_data(event, &mut out)?;
        }
        Ok(out.into_iter().collect())
    }

    #[test]
    fn thinking_block_becomes_deltas_then_one_part() {
        let items = decode_all(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"b"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S1"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S2"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ])
        .unwrap();
        assert_eq!(
            items,
            vec![
                StreamItem::Reasoning("a".into()),
                StreamItem::Reasoning("b".into()),
                StreamItem::ReasoningPart(ReasoningPart::Thinking {
                    text: "ab".into(),
                    signature: "S1S2".into()
                }),
            ]
        );
    }

    #[test]
    fn hostile_thinking_events_are_decode_errors_not_panics() {
        for events in [
            vec![
                r#"{"type":"content_block_delta","index":5,"delta":{"type":"signature_delta","signature":"x"}}"#,
            ],
            vec![
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"D"}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}"#,
            ],
            vec![
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking"}}"#,
            ],
        ] {
            assert!(matches!(
                decode_all(&events),
                Err(ProviderError::Decode { .. })
            ));
        }
    }

    #[test]
    fn an_unclosed_reasoning_block_is_kept_at_message_stop() {
        let items = decode_all(&[
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"B"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"A"}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        let parts: Vec<_> = items
            .iter()
            .filter_map(|item| match item {
                StreamItem::ReasoningPart(ReasoningPart::RedactedThinking { data }) => {
                    Some(data.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(parts, ["A", "B"]);
    }
}
