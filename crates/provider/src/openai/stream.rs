//! Decoding OpenAI chat-completion chunks (`data: {...}` … `data: [DONE]`).

use std::borrow::Cow;
use std::collections::VecDeque;

use oxydra_types::{CallId, FinishReason, StreamItem, ToolCallDelta};
use serde::Deserialize;

use super::text_hold::TextHold;
use super::wire::{WireUsage, finish_reason};
use crate::error::ProviderError;
use crate::http_error::{WireError, classify, excerpt};
use crate::sse::SseEvent;
use crate::text_tool_calls::new_call_id;
use crate::transport::EventDecoder;

/// A chunk, reading only the fields we need (strings borrowed where unescaped).
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    /// llama.cpp, vLLM, DeepSeek.
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    /// Ollama's `/v1`, Groq, OpenRouter.
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallChunk<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallChunk<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionChunk<'a>>,
}

#[derive(Deserialize)]
struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// Decodes an OpenAI-compatible SSE stream into stream items.
///
/// The finish reason is held back until `[DONE]` so that the usage-only chunk that
/// follows it (with `stream_options.include_usage`) comes out before
/// [`StreamItem::Finish`]. A `stop` finish beside tool calls (Ollama) is `ToolCalls`.
/// Reasoning deltas (`reasoning_content`, `reasoning`) become
/// [`StreamItem::Reasoning`].
///
/// Built [`with_tools`](Self::with_tools), it also recovers tool calls the model
/// wrote as text: text is held back from the first `<tool_call>` or ```` ``` ```` to
/// the end, and at `[DONE]`, when no real tool call came, the blocks naming one of
/// the tools become calls and leave the text.
#[derive(Debug, Default)]
pub struct OpenAiStreamDecoder {
    finish: Option<FinishReason>,
    saw_tool_calls: bool,
    refused: bool,
    done: bool,
    /// One past the highest tool-call index seen (the index a new call without one gets).
    next_call_index: u32,
    /// The index of the tool call the latest fragment belonged to.
    current_call: Option<u32>,
    /// The id of each tool call, by index, once known.
    call_ids: Vec<(u32, String)>,
    /// Text held back while it may hold a tool call written as text.
    hold: TextHold,
}

impl OpenAiStreamDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that recovers tool calls written as text naming one of `tools`.
    pub fn with_tools(tools: Vec<String>) -> Self {
        Self {
            hold: TextHold::new(tools),
            ..Self::default()
        }
    }

    /// Decodes one SSE `data` payload, pushing the items it yields onto `out`.
    pub fn decode_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            self.flush_held(out);
            let reason = match self.finish.take() {
                None if self.refused => FinishReason::Refusal,
                Some(FinishReason::Stop) | None if self.saw_tool_calls => FinishReason::ToolCalls,
                Some(reason) => reason,
                None => FinishReason::Stop,
            };
            out.push_back(StreamItem::Finish(reason));
            return Ok(());
        }
        if data.is_empty() || self.done {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| ProviderError::Decode {
            what: format!("OpenAI stream chunk ({e})"),
            excerpt: excerpt(data),
        })?;
        if let Some(error) = chunk.error {
            return Err(classify(None, None, &error));
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta
                    .reasoning_content
                    .or(delta.reasoning)
                    .filter(|t| !t.is_empty())
                {
                    out.push_back(StreamItem::Reasoning(text.into_owned()));
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.hold.push(text, out);
                }
                if let Some(refusal) = delta.refusal.filter(|t| !t.is_empty()) {
                    self.refused = true;
                    out.push_back(StreamItem::Text(refusal.into_owned()));
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.saw_tool_calls = true;
                    let id = call.id.filter(|id| !id.is_empty());
                    let index = self.call_index(call.index, id.as_deref());
                    let (name, arguments) = match call.function {
                        Some(function) => (function.name, function.arguments),
                        None => (None, None),
                    };
                    out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                        index,
                        id: id.map(|id| CallId::from(id.into_owned())),
                        name: name.filter(|n| !n.is_empty()).map(Cow::into_owned),
                        arguments: arguments.map(Cow::into_owned).unwrap_or_default(),
                    }));
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            out.push_back(StreamItem::Usage(usage.to_usage()));
        }
        Ok(())
    }
}

impl OpenAiStreamDecoder {
    /// At the end: the held text, with the tool calls it holds recovered when no real
    /// call came.
    fn flush_held(&mut self, out: &mut VecDeque<StreamItem>) {
        for call in self.hold.finish(self.saw_tool_calls, out) {
            self.saw_tool_calls = true;
            out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                index: self.next_call_index,
                id: Some(CallId::from(new_call_id())),
                name: Some(call.name),
                arguments: call.arguments,
            }));
            self.next_call_index = self.next_call_index.saturating_add(1);
        }
    }

    /// The index of a tool-call fragment. Servers that omit `index` are followed by
    /// id: a fragment with an id other than the current call's starts a new call, one
    /// without an id continues the current call.
    fn call_index(&mut self, given: Option<u32>, id: Option<&str>) -> u32 {
        let known = |index: u32| {
            self.call_ids
                .iter()
                .find(|(at, _)| *at == index)
                .map(|(_, id)| id.as_str())
        };
        let index = match (given, self.current_call) {
            (Some(index), _) => index,
            (None, None) => self.next_call_index,
            (None, Some(current)) => match id {
                // A repeated id names its call; an id the current call does not have
                // starts a new one.
                Some(id) => match self.call_ids.iter().find(|(_, known)| known == id) {
                    Some((index, _)) => *index,
                    None if known(current).is_some() => self.next_call_index,
                    None => current,
                },
                None => current,
            },
        };
        if let Some(id) = id
            && known(index).is_none()
        {
            self.call_ids.push((index, id.to_owned()));
        }
        self.next_call_index = self.next_call_index.max(index.saturating_add(1));
        self.current_call = Some(index);
        index
    }
}

impl EventDecoder for OpenAiStreamDecoder {
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        if event.event == "error" {
            let error = serde_json::from_str::<Chunk<'_>>(&event.data)
                .ok()
                .and_then(|c| c.error)
                .unwrap_or(WireError {
                    message: Some(excerpt(&event.data)),
                    ..WireError::default()
                });
            return Err(classify(None, None, &error));
        }
        self.decode_data(&event.data, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_marker(&self) -> &'static str {
        "[DONE]"
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn finish_waits_for_done_and_usage_comes_first() {
        let mut decoder = OpenAiStreamDecoder::new();
        let mut out = VecDeque::new();
        decoder
            .decode_data(
                r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
                &mut out,
            )
            .unwrap();
        decoder
            .decode_data(
                r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
                &mut out,
            )
            .unwrap();
        assert!(!decoder.is_done());
        decoder.decode_data("[DONE]", &mut out).unwrap();
        assert!(decoder.is_done());
        let items: Vec<_> = out.into_iter().collect();
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], StreamItem::Text("Hi".into()));
        assert!(matches!(items[1], StreamItem::Usage(u) if u.input_tokens == 3));
        assert_eq!(items[2], StreamItem::Finish(FinishReason::Stop));
    }

    pub(crate) fn tool_deltas(out: VecDeque<StreamItem>) -> Vec<ToolCallDelta> {
        out.into_iter()
            .filter_map(|item| match item {
                StreamItem::ToolCallDelta(delta) => Some(delta),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let mut decoder = OpenAiStreamDecoder::new();
        let mut out = VecDeque::new();
        for chunk in [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_a","function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"write","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_c","function":{"name":"list","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ] {
            decoder.decode_data(chunk, &mut out).unwrap();
        }
        let indices: Vec<u32> = tool_deltas(out.clone()).iter().map(|d| d.index).collect();
        assert_eq!(indices, vec![0, 0, 0, 1, 1, 2]);

        let mut acc = crate::StreamAccumulator::new();
        out.iter().for_each(|item| acc.push(item));
        let response = acc.finish().unwrap();
        let calls: Vec<(String, String, String)> = response
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.to_string(), c.name.clone(), c.arguments.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_a".into(), "read".into(), r#"{"p":1}"#.into()),
                ("call_b".into(), "write".into(), "{}".into()),
                ("call_c".into(), "list".into(), "{}".into()),
            ]
        );
    }

    #[test]
    fn calls_with_index_keep_it_and_later_calls_without_one_follow_on() {
        let mut decoder = OpenAiStreamDecoder::new();
        let mut out = VecDeque::new();
        for chunk in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":""}},{"index":1,"id":"b","function":{"name":"y","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"z","arguments":"{}"}}]}}]}"#,
        ] {
            decoder.decode_data(chunk, &mut out).unwrap();
        }
        let indices: Vec<u32> = tool_deltas(out).iter().map(|d| d.index).collect();
        assert_eq!(indices, vec![0, 1, 0, 2]);
    }

    #[test]
    fn malformed_chunk_quotes_an_excerpt() {
        let mut decoder = OpenAiStreamDecoder::new();
        let error = decoder
            .decode_data(
                r#"{"choices":[{"delta":{"content":"Hi"}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        match error {
            ProviderError::Decode { excerpt, .. } => {
                assert!(excerpt.contains("\"content\":\"Hi\""))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_chunk_is_classified() {
        let mut decoder = OpenAiStreamDecoder::new();
        let error = decoder
            .decode_data(
                r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(matches!(error, ProviderError::Overloaded { .. }));
    }

    pub(crate) fn decode_all(
        decoder: &mut OpenAiStreamDecoder,
        chunks: &[&str],
    ) -> Vec<StreamItem> {
        let mut out = VecDeque::new();
        for chunk in chunks {
            decoder.decode_data(chunk, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    pub(crate) fn text_chunk(text: &str) -> String {
        serde_json::json!({"choices": [{"delta": {"content": text}}]}).to_string()
    }

    #[test]
    fn reasoning_fields_become_reasoning_items() {
        let items = decode_all(
            &mut OpenAiStreamDecoder::new(),
            &[
                r#"{"choices":[{"delta":{"reasoning_content":"Let me"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":" think","channel":"analysis"}}]}"#,
                r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
        );
        assert_eq!(
            items,
            vec![
                StreamItem::Reasoning("Let me".into()),
                StreamItem::Reasoning(" think".into()),
                StreamItem::Text("Hi".into()),
                StreamItem::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn a_legacy_function_call_beside_tool_calls_is_no_second_call() {
        let items = decode_all(
            &mut OpenAiStreamDecoder::new(),
            &[
                r#"{"choices":[{"delta":{"function_call":{"name":"file_list:","arguments":"{}"},"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"file_list","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"function_call":{"arguments":""}},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
        );
        let deltas = tool_deltas(items.into_iter().collect());
        assert_eq!(deltas.len(), 1);
        assert_eq!(deltas[0].name.as_deref(), Some("file_list"));
    }

    #[test]
    fn stop_beside_tool_calls_is_tool_calls() {
        let items = decode_all(
            &mut OpenAiStreamDecoder::new(),
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"x","arguments":"{}"}}]},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
        );
        assert_eq!(
            items.last(),
            Some(&StreamItem::Finish(FinishReason::ToolCalls))
        );
    }
}
