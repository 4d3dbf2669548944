//! Decoding a streamed Responses API answer (`response.*` events) into stream items.

use std::borrow::Cow;
use std::collections::VecDeque;

use oxydra_types::{CallId, StreamItem, ToolCallDelta};
use serde::Deserialize;
use serde_json::Value;

use super::wire::{OutputItem, ResponseState, WireUsage, failure};
use crate::error::ProviderError;
use crate::http_error::{WireError, excerpt};
use crate::openai::text_hold::TextHold;
use crate::sse::SseEvent;
use crate::text_tool_calls::new_call_id;
use crate::transport::EventDecoder;

/// One event, reading only the fields some event type needs (strings borrowed where
/// unescaped). Items stay JSON until their type is known: built-in tools' items have
/// shapes of their own.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u32>,
    #[serde(default)]
    summary_index: Option<u32>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    response: Option<ResponseState>,
    /// An `error` event's error (older shape: nested).
    #[serde(default)]
    error: Option<WireError>,
    /// An `error` event's code and message (newer shape: at the top level).
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// Only an event's type: read when the whole event does not decode, to tell an event
/// we rely on from one we skip.
#[derive(Deserialize)]
struct EventType<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// The event types this decoder reads; any other is skipped.
const HANDLED: [&str; 14] = [
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_part.added",
    "response.reasoning_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

/// A function call of this response.
#[derive(Debug)]
struct Call {
    /// The output item it is.
    output_index: Option<u32>,
    /// Its index among the response's tool calls.
    index: u32,
    /// Whether any of its arguments went out yet.
    arguments_sent: bool,
}

/// Decodes a Responses API event stream into stream items.
///
/// Text deltas become [`StreamItem::Text`]; reasoning summary deltas and raw
/// `reasoning_text` deltas (LM Studio) become [`StreamItem::Reasoning`]; each
/// finished `reasoning` item (its id, summaries and `encrypted_content`) becomes one
/// [`StreamItem::ReasoningPart`] to send back on the next request; function calls
/// become tool-call deltas by their order in the response, their arguments taken from
/// the `.delta` events or, when a server sends none (LM Studio), from `.done`. Items
/// of built-in tools and unknown events are skipped. `response.completed` (or
/// `response.incomplete`, finishing with `Length`) ends the stream with usage;
/// `error` and `response.failed` fail it with the provider's code and message.
///
/// Built [`with_tools`](Self::with_tools), it recovers tool calls a model wrote as
/// text, as the chat-completions decoder does.
#[derive(Debug, Default)]
pub struct OpenAiResponsesStreamDecoder {
    done: bool,
    calls: Vec<Call>,
    refused: bool,
    /// Whether the current output item streamed any text.
    item_text_sent: bool,
    /// Whether the current output item streamed any reasoning.
    item_reasoning_sent: bool,
    hold: TextHold,
    /// Bytes of the events skipped so far (built-in tools' progress, echoes of the
    /// request), and the most allowed: they hold nothing of the response, so the
    /// response cap does not count them, yet a server must not stream them for ever.
    skipped_bytes: usize,
    skip_limit: Option<usize>,
}

impl OpenAiResponsesStreamDecoder {
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

    /// The same decoder, failing with [`ProviderError::ResponseTooLarge`] once the
    /// events it skips (of built-in tools, or of types it does not know) pass `bytes`.
    pub fn with_skip_limit(mut self, bytes: usize) -> Self {
        self.skip_limit = Some(bytes);
        self
    }

    /// Counts a skipped event against the skip limit.
    fn skip(&mut self, bytes: usize) -> Result<(), ProviderError> {
        self.skipped_bytes = self.skipped_bytes.saturating_add(bytes);
        match self.skip_limit {
            Some(limit) if self.skipped_bytes > limit => Err(ProviderError::ResponseTooLarge {
                limit,
                what: "bytes of skipped events",
            }),
            _ => Ok(()),
        }
    }

    /// Decodes one SSE `data` payload (an event carrying its own `type`), pushing the
    /// items it yields onto `out`.
    pub fn decode_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() || self.done {
            return Ok(());
        }
        let event: Event<'_> = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(error) => {
                let known = serde_json::from_str::<EventType<'_>>(data)
                    .map(|event| HANDLED.contains(&event.kind.as_ref()));
                return match known {
                    // An event of a type we skip, in a shape of its own.
                    Ok(false) => self.skip(data.len()),
                    Ok(true) | Err(_) => Err(ProviderError::Decode {
                        what: format!("Responses API event ({error})"),
                        excerpt: excerpt(data),
                    }),
                };
            }
        };
        match event.kind.as_ref() {
            "response.output_item.added" => {
                self.item_text_sent = false;
                self.item_reasoning_sent = false;
                match event.item.and_then(function_call) {
                    Some(item) => self.start_call(event.output_index, &item, out),
                    None => self.skip(data.len())?,
                }
            }
            "response.output_item.done" => match event.item.and_then(known_item) {
                Some(item) => self.finish_item(event.output_index, &item, out),
                None => self.skip(data.len())?,
            },
            "response.output_text.delta" => {
                if let Some(text) = event.delta.filter(|t| !t.is_empty()) {
                    self.item_text_sent = true;
                    self.hold.push(text, out);
                }
            }
            "response.output_text.done" => {
                if !self.item_text_sent
                    && let Some(text) = event.text.filter(|t| !t.is_empty())
                {
                    self.hold.push(text, out);
                }
                self.item_text_sent = true;
            }
            "response.refusal.delta" => {
                if let Some(text) = event.delta.filter(|t| !t.is_empty()) {
                    self.refused = true;
                    self.item_text_sent = true;
                    out.push_back(StreamItem::Text(text.into_owned()));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(arguments) = event.delta.filter(|a| !a.is_empty()) {
                    self.call_arguments(event.output_index, arguments.into_owned(), out);
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = event.arguments.filter(|a| !a.is_empty())
                    && self
                        .call_at(event.output_index)
                        .is_some_and(|call| !call.arguments_sent)
                {
                    self.call_arguments(event.output_index, arguments.into_owned(), out);
                }
            }
            "response.reasoning_summary_part.added"
                if event.summary_index.is_some_and(|at| at > 0) =>
            {
                out.push_back(StreamItem::Reasoning("\n\n".to_owned()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = event.delta.filter(|t| !t.is_empty()) {
                    self.item_reasoning_sent = true;
                    out.push_back(StreamItem::Reasoning(text.into_owned()));
                }
            }
            "response.completed" | "response.incomplete" => {
                self.done = true;
                let state = event.response.unwrap_or_default();
                self.flush_held(out);
                if let Some(usage) = state.usage.as_ref().map(WireUsage::to_usage) {
                    out.push_back(StreamItem::Usage(usage));
                }
                let reason = if self.refused && self.calls.is_empty() {
                    oxydra_types::FinishReason::Refusal
                } else {
                    state.finish_reason(!self.calls.is_empty())
                };
                out.push_back(StreamItem::Finish(reason));
            }
            "response.failed" => {
                self.done = true;
                let error = event
                    .response
                    .and_then(|state| state.error)
                    .unwrap_or_default();
                return Err(failure(&error));
            }
            "error" => {
                self.done = true;
                let error = event.error.unwrap_or(WireError {
                    kind: None,
                    code: event.code,
                    message: event.message,
                    metadata: None,
                    details: None,
                });
                return Err(failure(&error));
            }
            _ => return self.skip(data.len()),
        }
        Ok(())
    }

    fn call_at(&self, output_index: Option<u32>) -> Option<&Call> {
        match output_index {
            Some(at) => self.calls.iter().find(|c| c.output_index == Some(at)),
            None => self.calls.last(),
        }
    }

    /// Opens a function call: its id and name (and any arguments the item carries).
    fn start_call(
        &mut self,
        output_index: Option<u32>,
        item: &OutputItem,
        out: &mut VecDeque<StreamItem>,
    ) {
        let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
        let arguments = item.arguments.clone().unwrap_or_default();
        self.calls.push(Call {
            output_index,
            index,
            arguments_sent: !arguments.is_empty(),
        });
        out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
            index,
            id: Some(CallId::from(
                item.call_id
                    .clone()
                    .or_else(|| item.id.clone())
                    .unwrap_or_else(new_call_id),
            )),
            name: item.name.clone().filter(|n| !n.is_empty()),
            arguments,
        }));
    }

    /// More arguments of the call at `output_index`.
    fn call_arguments(
        &mut self,
        output_index: Option<u32>,
        arguments: String,
        out: &mut VecDeque<StreamItem>,
    ) {
        let call = match output_index {
            Some(at) => self.calls.iter_mut().find(|c| c.output_index == Some(at)),
            None => self.calls.last_mut(),
        };
        if let Some(call) = call {
            call.arguments_sent = true;
            out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                index: call.index,
                id: None,
                name: None,
                arguments,
            }));
        }
    }

    /// A finished item: a reasoning item is kept whole; a function call or message
    /// that streamed nothing is sent from the item itself.
    fn finish_item(
        &mut self,
        output_index: Option<u32>,
        item: &OutputItem,
        out: &mut VecDeque<StreamItem>,
    ) {
        match item.kind.as_str() {
            "reasoning" => {
                if !self.item_reasoning_sent {
                    let visible = item
                        .summary
                        .iter()
                        .chain(&item.content)
                        .filter_map(|part| part.text.as_deref())
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    if !visible.is_empty() {
                        out.push_back(StreamItem::Reasoning(visible));
                    }
                }
                out.push_back(StreamItem::ReasoningPart(item.reasoning_part()));
            }
            "function_call" => match self.call_at(output_index) {
                None => self.start_call(output_index, item, out),
                Some(call) if !call.arguments_sent => {
                    if let Some(arguments) = item.arguments.clone().filter(|a| !a.is_empty()) {
                        self.call_arguments(output_index, arguments, out);
                    }
                }
                Some(_) => {}
            },
            "message" if !self.item_text_sent => {
                for part in &item.content {
                    if let Some(text) = part.text.as_deref().filter(|t| !t.is_empty()) {
                        self.hold.push(Cow::Borrowed(text), out);
                    }
                }
                self.item_text_sent = true;
            }
            _ => {}
        }
    }

    /// At the end: the held text, with the tool calls it holds recovered when no real
    /// call came.
    fn flush_held(&mut self, out: &mut VecDeque<StreamItem>) {
        for call in self.hold.finish(!self.calls.is_empty(), out) {
            let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
            self.calls.push(Call {
                output_index: None,
                index,
                arguments_sent: true,
            });
            out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                index,
                id: Some(CallId::from(new_call_id())),
                name: Some(call.name),
                arguments: call.arguments,
            }));
        }
    }
}

/// The item, when it is a function call.
fn function_call(item: Value) -> Option<OutputItem> {
    let is_call = item.get("type").and_then(Value::as_str) == Some("function_call");
    is_call.then(|| serde_json::from_value(item).ok()).flatten()
}

/// The item, when it is a reasoning item, a message or a function call (the others
/// belong to built-in tools and are skipped).
fn known_item(item: Value) -> Option<OutputItem> {
    let kind = item.get("type").and_then(Value::as_str)?;
    ["reasoning", "message", "function_call"]
        .contains(&kind)
        .then(|| serde_json::from_value(item).ok())
        .flatten()
}

impl EventDecoder for OpenAiResponsesStreamDecoder {
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
        "response.completed"
    }
}

#[cfg(test)]
mod tests;
