//! Turning the generated text into stream items: answer text is passed on as it
//! comes, except what might be the start of a tool-call opener, which is held
//! until it is clear; from the opener on, the output is kept and read as calls
//! at the end.

use std::sync::atomic::{AtomicU64, Ordering};

use oxydra_types::{CallId, FinishReason, StreamItem, ToolCallDelta};

use crate::tool_format::ToolFormat;

/// Splits one generation's output into text deltas and tool calls.
#[derive(Debug)]
pub struct OutputSplitter {
    format: ToolFormat,
    tools: bool,
    held: String,
    calls: Option<String>,
}

impl OutputSplitter {
    /// A splitter for `format`; `tools` says whether calls can occur at all.
    pub fn new(format: ToolFormat, tools: bool) -> Self {
        Self {
            format,
            tools,
            held: String::new(),
            calls: None,
        }
    }

    /// Takes the next piece of output; returns the text that can be shown now.
    pub fn push(&mut self, piece: &str) -> Option<String> {
        if let Some(calls) = &mut self.calls {
            calls.push_str(piece);
            return None;
        }
        if !self.tools {
            return Some(piece.to_owned()).filter(|s| !s.is_empty());
        }
        self.held.push_str(piece);
        let trigger = self.format.trigger();
        if let Some(start) = self.held.find(trigger) {
            let calls = self.held.split_off(start);
            self.calls = Some(calls);
            let text = std::mem::take(&mut self.held);
            return Some(text).filter(|s| !s.is_empty());
        }
        // Hold back the longest tail that could still grow into the opener.
        let keep = (1..trigger.len().min(self.held.len() + 1))
            .rev()
            .find(|&n| {
                self.held.is_char_boundary(self.held.len() - n)
                    && trigger.starts_with(self.held.get(self.held.len() - n..).unwrap_or_default())
            })
            .unwrap_or(0);
        let tail = self.held.split_off(self.held.len() - keep);
        let text = std::mem::replace(&mut self.held, tail);
        Some(text).filter(|s| !s.is_empty())
    }

    /// Ends the output: the held text, the parsed calls, and the finish reason
    /// (`ToolCalls` when there are calls). Calls that do not parse even once repaired
    /// ([`ToolFormat::parse`] reads a block without its closer, a list of calls in one
    /// block, and drops what follows the last whole call) are never passed on as
    /// text: they are [`Split::Malformed`], for the provider to retry or report.
    pub fn finish(mut self, finish: FinishReason) -> Split {
        let mut items = Vec::new();
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            items.push(StreamItem::Text(held));
        }
        let Some(raw) = self.calls else {
            return Split::Done(items, finish);
        };
        match self.format.parse(&raw) {
            Some((_, calls)) if !calls.is_empty() => {
                for (index, call) in calls.into_iter().enumerate() {
                    items.push(StreamItem::ToolCallDelta(ToolCallDelta {
                        index: u32::try_from(index).unwrap_or(u32::MAX),
                        id: Some(next_call_id()),
                        name: Some(call.name),
                        arguments: call.arguments,
                    }));
                }
                Split::Done(items, FinishReason::ToolCalls)
            }
            _ => Split::Malformed {
                text: items,
                name: self.format.called_name(&raw),
                raw,
                finish,
            },
        }
    }
}

/// The end of one generation's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Split {
    /// Text and calls that parsed, and the finish reason.
    Done(Vec<StreamItem>, FinishReason),
    /// The output opened a tool call that does not parse.
    Malformed {
        /// The text before the call (not yet streamed).
        text: Vec<StreamItem>,
        /// The raw call, from its opener.
        raw: String,
        /// The tool it names, when that much came out whole.
        name: Option<String>,
        /// Why the generation ended.
        finish: FinishReason,
    },
}

/// A call id unique in this process and unlikely to repeat across processes.
pub(crate) fn next_call_id() -> CallId {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    CallId::from(format!("call_{:x}{n:x}", nanos & 0xffff_ffff_ffff).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(splitter: &mut OutputSplitter, pieces: &[&str]) -> String {
        pieces.iter().filter_map(|p| splitter.push(p)).collect()
    }

    fn done(split: Split) -> (Vec<StreamItem>, FinishReason) {
        match split {
            Split::Done(items, finish) => (items, finish),
            other => panic!("not done: {other:?}"),
        }
    }

    #[test]
    fn text_streams_and_an_opener_split_across_pieces_is_held() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        assert_eq!(s.push("Hello <").as_deref(), Some("Hello "));
        assert_eq!(s.push("tool"), None);
        assert_eq!(s.push("s are fun").as_deref(), Some("<tools are fun"));
        let (items, finish) = done(s.finish(FinishReason::Stop));
        assert!(items.is_empty());
        assert_eq!(finish, FinishReason::Stop);
    }

    #[test]
    fn calls_after_text_become_tool_call_deltas() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        let text = run(
            &mut s,
            &[
                "Sure.\n<tool_",
                "call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n",
                "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
            ],
        );
        assert_eq!(text, "Sure.\n");
        let (items, finish) = done(s.finish(FinishReason::Stop));
        assert_eq!(finish, FinishReason::ToolCalls);
        assert_eq!(items.len(), 2);
        let StreamItem::ToolCallDelta(first) = &items[0] else {
            panic!()
        };
        let StreamItem::ToolCallDelta(second) = &items[1] else {
            panic!()
        };
        assert_eq!((first.index, first.name.as_deref()), (0, Some("a")));
        assert_eq!(first.arguments, r#"{"x":1}"#);
        assert_eq!((second.index, second.name.as_deref()), (1, Some("b")));
        assert_ne!(first.id, second.id);
    }

    #[test]
    fn a_cut_call_is_malformed_never_text() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        assert_eq!(
            run(&mut s, &["Ok. <tool_call>\n{\"name\": \"a\", \"argu"]),
            "Ok. "
        );
        assert_eq!(
            s.finish(FinishReason::Length),
            Split::Malformed {
                text: Vec::new(),
                raw: "<tool_call>\n{\"name\": \"a\", \"argu".into(),
                name: Some("a".into()),
                finish: FinishReason::Length,
            }
        );
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        run(&mut s, &["<tool_call>[{\"name\":\"file_wr"]);
        let Split::Malformed { name, .. } = s.finish(FinishReason::Stop) else {
            panic!()
        };
        assert_eq!(name, None, "a name cut short names no tool");
    }

    #[test]
    fn a_call_without_its_closer_or_with_a_tail_is_repaired() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        run(
            &mut s,
            &["<tool_call>\n[{\"name\": \"a\", \"arguments\": {\"x\": 1}}]\n"],
        );
        let (items, finish) = done(s.finish(FinishReason::Stop));
        assert_eq!(finish, FinishReason::ToolCalls);
        assert_eq!(items.len(), 1);
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        run(
            &mut s,
            &["<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\nDone!"],
        );
        let (items, finish) = done(s.finish(FinishReason::Stop));
        assert_eq!(finish, FinishReason::ToolCalls);
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn without_tools_nothing_is_held() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, false);
        assert_eq!(s.push("<tool_call>").as_deref(), Some("<tool_call>"));
    }

    #[test]
    fn multibyte_text_near_the_opener_is_not_split_inside_a_character() {
        let mut s = OutputSplitter::new(ToolFormat::Hermes, true);
        let text = run(&mut s, &["日本<", "語"]);
        assert_eq!(text, "日本<語");
    }
}
