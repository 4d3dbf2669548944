//! Decoding Ollama `/api/chat` lines (NDJSON, or one whole non-streamed body) into
//! stream items.

use std::borrow::Cow;
use std::collections::VecDeque;

use oxydra_types::{CallId, FinishReason, StreamItem, ToolCallDelta, Usage};
use serde::Deserialize;

use crate::error::ProviderError;
use crate::http_error::excerpt;
use crate::sse::SseEvent;
use crate::transport::EventDecoder;

/// One line, reading only the fields we use.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    message: Option<LineMessage<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default, borrow)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: u64,
    #[serde(default)]
    eval_count: u64,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct LineMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Vec<WireCall<'a>>,
}

#[derive(Deserialize)]
struct WireCall<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: WireFunction<'a>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// Decodes Ollama's native chat stream into stream items.
///
/// `message.content` becomes text and `message.thinking` reasoning text; each entry of
/// `message.tool_calls` is a whole call (its `arguments` object serialised to the raw
/// string; a fresh id when the server sent none). The line with `done: true` ends the
/// stream with its usage (`prompt_eval_count`, `eval_count`); its `done_reason` is
/// `stop` even after tool calls, which then finish as tool calls. An `error` line
/// fails the stream.
#[derive(Debug, Default)]
pub struct OllamaStreamDecoder {
    calls: u32,
    done: bool,
}

impl OllamaStreamDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one line, pushing the items it yields onto `out`.
    pub fn decode_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let line: Line<'_> = serde_json::from_str(data).map_err(|e| ProviderError::Decode {
            what: format!("Ollama chat line ({e})"),
            excerpt: excerpt(data),
        })?;
        if let Some(error) = line.error {
            return Err(ProviderError::Server {
                status: 500,
                message: error.into_owned(),
            });
        }
        if let Some(message) = line.message {
            if let Some(thinking) = message.thinking.filter(|t| !t.is_empty()) {
                out.push_back(StreamItem::Reasoning(thinking.into_owned()));
            }
            if let Some(content) = message.content.filter(|t| !t.is_empty()) {
                out.push_back(StreamItem::Text(content.into_owned()));
            }
            for call in message.tool_calls {
                let id = match call.id.filter(|id| !id.is_empty()) {
                    Some(id) => CallId::from(id.into_owned()),
                    None => CallId::generate(),
                };
                let arguments = match call.function.arguments {
                    None | Some(serde_json::Value::Null) => "{}".to_owned(),
                    Some(serde_json::Value::String(raw)) => raw,
                    Some(args) => args.to_string(),
                };
                out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                    index: self.calls,
                    id: Some(id),
                    name: Some(call.function.name.into_owned()),
                    arguments,
                }));
                self.calls = self.calls.saturating_add(1);
            }
        }
        if line.done {
            self.done = true;
            out.push_back(StreamItem::Usage(Usage::new(
                line.prompt_eval_count,
                line.eval_count,
                0,
            )));
            let reason = match line.done_reason.as_deref() {
                None | Some("stop") if self.calls > 0 => FinishReason::ToolCalls,
                None | Some("stop") => FinishReason::Stop,
                Some("length") => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_owned()),
            };
            out.push_back(StreamItem::Finish(reason));
        }
        Ok(())
    }

    /// Whether the `done` line has been seen.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

impl EventDecoder for OllamaStreamDecoder {
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
        "a line with \"done\": true"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_and_error_lines() {
        let mut decoder = OllamaStreamDecoder::new();
        let mut out = VecDeque::new();
        decoder
            .decode_data(
                r#"{"message":{"role":"assistant","content":"cut"},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":9}"#,
                &mut out,
            )
            .unwrap();
        assert_eq!(
            Vec::from(out),
            vec![
                StreamItem::Text("cut".into()),
                StreamItem::Usage(Usage::new(3, 9, 0)),
                StreamItem::Finish(FinishReason::Length)
            ]
        );
        let error = OllamaStreamDecoder::new()
            .decode_data(
                r#"{"error":"model runner has unexpectedly stopped"}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(
            error.to_string().contains("unexpectedly stopped"),
            "{error}"
        );
    }

    #[test]
    fn calls_without_ids_get_unique_ones() {
        let mut decoder = OllamaStreamDecoder::new();
        let mut out = VecDeque::new();
        let line = r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"a","arguments":{"x":1}}},{"function":{"name":"b","arguments":"{\"y\":2}"}}]},"done":false}"#;
        decoder.decode_data(line, &mut out).unwrap();
        let deltas: Vec<ToolCallDelta> = out
            .into_iter()
            .filter_map(|item| match item {
                StreamItem::ToolCallDelta(delta) => Some(delta),
                _ => None,
            })
            .collect();
        assert_eq!(deltas.len(), 2);
        assert_ne!(deltas[0].id, deltas[1].id);
        assert_eq!((deltas[0].index, deltas[1].index), (0, 1));
        assert_eq!(deltas[0].arguments, r#"{"x":1}"#);
        assert_eq!(deltas[1].arguments, r#"{"y":2}"#);
    }
}
