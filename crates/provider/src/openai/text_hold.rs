//! Holding back streamed text that may be a tool call written as text, and
//! recovering the calls from it at the end of the stream.

use std::borrow::Cow;
use std::collections::VecDeque;

use oxydra_types::StreamItem;

use crate::text_tool_calls::{MARKERS, TextToolCall, marker_start, recover};

/// The most text held back while a block written as text may be open. A tool call is
/// far smaller; past this the text is handed on (and counted against the response
/// cap) and nothing more is recovered from this stream, so an endless answer after a
/// ```` ``` ```` is never buffered without bound.
pub(crate) const MAX_HELD_BYTES: usize = 64 * 1024;

/// Streamed text on its way out. With no tools it passes straight through. With the
/// request's tool names it is held back from the first `<tool_call>` or ```` ``` ````
/// (or the start of one cut by a chunk boundary) to the end of the stream.
#[derive(Debug, Default)]
pub(crate) struct TextHold {
    /// The request's tool names (empty: nothing is held or recovered).
    tools: Vec<String>,
    /// A cut marker at the end of the text so far or, once `holding`, everything from
    /// a whole marker on.
    held: String,
    holding: bool,
}

impl TextHold {
    /// Holding for calls naming one of `tools`.
    pub(crate) fn new(tools: Vec<String>) -> Self {
        Self {
            tools,
            ..Self::default()
        }
    }

    /// Hands `text` on as a [`StreamItem::Text`], or holds it back.
    pub(crate) fn push(&mut self, text: Cow<'_, str>, out: &mut VecDeque<StreamItem>) {
        if self.tools.is_empty() || (self.held.is_empty() && marker_start(&text).is_none()) {
            out.push_back(StreamItem::Text(text.into_owned()));
            return;
        }
        self.held.push_str(&text);
        if self.holding {
            if self.held.len() > MAX_HELD_BYTES {
                self.tools.clear();
                self.holding = false;
                out.push_back(StreamItem::Text(std::mem::take(&mut self.held)));
            }
            return;
        }
        match marker_start(&self.held) {
            None => out.push_back(StreamItem::Text(std::mem::take(&mut self.held))),
            Some(at) => {
                let rest = self.held.split_off(at);
                let before = std::mem::replace(&mut self.held, rest);
                if !before.is_empty() {
                    out.push_back(StreamItem::Text(before));
                }
                self.holding = MARKERS.iter().any(|marker| self.held.starts_with(marker));
            }
        }
    }

    /// At the end of the stream: the calls the held text holds (when `saw_real_calls`
    /// is false and a block names one of the tools), its remaining text pushed onto
    /// `out`; or no calls and all of the held text pushed as it was.
    pub(crate) fn finish(
        &mut self,
        saw_real_calls: bool,
        out: &mut VecDeque<StreamItem>,
    ) -> Vec<TextToolCall> {
        let held = std::mem::take(&mut self.held);
        self.holding = false;
        if held.is_empty() {
            return Vec::new();
        }
        let recovered = if saw_real_calls {
            None
        } else {
            recover(&held, &self.tools)
        };
        let Some(recovered) = recovered else {
            out.push_back(StreamItem::Text(held));
            return Vec::new();
        };
        if !recovered.text.is_empty() {
            out.push_back(StreamItem::Text(recovered.text));
        }
        recovered.calls
    }
}

#[cfg(test)]
mod tests {
    use oxydra_types::{CallId, FinishReason};

    use super::*;
    use crate::openai::OpenAiStreamDecoder;
    use crate::openai::stream::tests::{decode_all, text_chunk, tool_deltas};

    #[test]
    fn a_call_written_as_text_is_recovered_across_chunks() {
        let tools = vec!["file_read".to_owned()];
        let pieces = [
            "Reading it now. <tool",
            "_call>{\"name\": \"file_read\", ",
            "\"arguments\": {\"path\": \"a.md\"}}</tool_call>",
        ];
        let mut chunks: Vec<String> = pieces.iter().map(|p| text_chunk(p)).collect();
        chunks.push(r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#.into());
        chunks.push("[DONE]".into());
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let items = decode_all(&mut OpenAiStreamDecoder::with_tools(tools), &chunks);
        let mut acc = crate::StreamAccumulator::new();
        items.iter().for_each(|item| acc.push(item));
        let response = acc.finish().unwrap();
        assert_eq!(response.message.text(), "Reading it now. ");
        assert_eq!(response.message.tool_calls.len(), 1);
        assert_eq!(response.message.tool_calls[0].name, "file_read");
        assert_eq!(
            response.message.tool_calls[0].arguments,
            r#"{"path":"a.md"}"#
        );
        assert!(
            response.message.tool_calls[0]
                .id
                .as_str()
                .starts_with("call_")
        );
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        // The text before the block was not held back.
        assert_eq!(items[0], StreamItem::Text("Reading it now. ".into()));
    }

    #[test]
    fn text_blocks_stay_text_when_unregistered_or_beside_real_calls() {
        let block = text_chunk("<tool_call>{\"name\":\"file_read\",\"arguments\":{}}</tool_call>");
        // A real call in the same response: the block stays text.
        let items = decode_all(
            &mut OpenAiStreamDecoder::with_tools(vec!["file_read".into()]),
            &[
                &block,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"file_read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
        );
        let deltas = tool_deltas(items.iter().cloned().collect());
        assert_eq!(deltas.len(), 1);
        assert_eq!(deltas[0].id.as_ref().map(CallId::as_str), Some("c"));
        assert!(items.contains(&StreamItem::Text(
            "<tool_call>{\"name\":\"file_read\",\"arguments\":{}}</tool_call>".into()
        )));
        // A name the request does not offer: text, finish stays stop.
        let items = decode_all(
            &mut OpenAiStreamDecoder::with_tools(vec!["other".into()]),
            &[
                &block,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
        );
        assert!(tool_deltas(items.iter().cloned().collect()).is_empty());
        assert_eq!(items.last(), Some(&StreamItem::Finish(FinishReason::Stop)));
        // Without tools nothing is held back: each piece comes out as it arrives.
        let items = decode_all(
            &mut OpenAiStreamDecoder::new(),
            &[&text_chunk("a ``"), &text_chunk("`x")],
        );
        assert_eq!(
            items,
            vec![
                StreamItem::Text("a ``".into()),
                StreamItem::Text("`x".into())
            ]
        );
    }

    #[test]
    fn held_text_is_bounded() {
        let mut decoder = OpenAiStreamDecoder::with_tools(vec!["t".into()]);
        let mut out = VecDeque::new();
        let piece = text_chunk(&"x".repeat(1024));
        decoder
            .decode_data(&text_chunk("```json\n"), &mut out)
            .unwrap();
        for _ in 0..(MAX_HELD_BYTES / 1024 - 1) {
            decoder.decode_data(&piece, &mut out).unwrap();
        }
        assert!(out.is_empty(), "held while a block may be open");
        decoder.decode_data(&piece, &mut out).unwrap();
        let released: usize = out
            .iter()
            .map(|item| match item {
                StreamItem::Text(text) => text.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(released, MAX_HELD_BYTES + "```json\n".len());
        // From then on text flows as it comes, even a whole block.
        out.clear();
        let block = text_chunk("<tool_call>{\"name\":\"t\",\"arguments\":{}}</tool_call>");
        decoder.decode_data(&block, &mut out).unwrap();
        decoder.decode_data("[DONE]", &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert!(matches!(&out[0], StreamItem::Text(t) if t.starts_with("<tool_call>")));
    }

    #[test]
    fn a_cut_marker_that_turns_out_plain_is_released() {
        let items = decode_all(
            &mut OpenAiStreamDecoder::with_tools(vec!["t".into()]),
            &[&text_chunk("1 <"), &text_chunk(" 2"), "[DONE]"],
        );
        assert_eq!(
            items,
            vec![
                StreamItem::Text("1 ".into()),
                StreamItem::Text("< 2".into()),
                StreamItem::Finish(FinishReason::Stop),
            ]
        );
    }
}
