//! Assembling a stream of [`StreamItem`]s into one [`ProviderResponse`].

use std::collections::BTreeMap;

use oxydra_types::{
    CallId, FinishReason, Message, ModelFallback, ReasoningPart, RuntimeEvent, StreamItem,
    ToolCall, ToolCallDelta, Usage,
};

use crate::error::ProviderError;
use crate::request::ProviderResponse;

/// A tool call being assembled from its deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<CallId>,
    name: Option<String>,
    arguments: String,
}

/// Feeds on [`StreamItem`]s and builds the final [`ProviderResponse`].
///
/// Text pieces are concatenated, and so are reasoning pieces (kept apart, in
/// [`ProviderResponse::reasoning`]); tool-call deltas are grouped by `index` (the first
/// `id` and `name` seen for an index win, argument fragments are concatenated); the
/// last [`StreamItem::Usage`] is taken as the call's total; a
/// [`StreamItem::Finish`] must arrive, or [`finish`](Self::finish) fails. Argument
/// strings stay raw: invalid JSON is kept as it came, never replaced by `{}`.
///
/// ```
/// use oxydra_provider::StreamAccumulator;
/// use oxydra_types::{FinishReason, StreamItem, Usage};
///
/// let mut acc = StreamAccumulator::new();
/// acc.push(&StreamItem::Text("Hel".into()));
/// acc.push(&StreamItem::Text("lo".into()));
/// acc.push(&StreamItem::Usage(Usage::new(3, 2, 0)));
/// acc.push(&StreamItem::Finish(FinishReason::Stop));
/// let response = acc.finish().unwrap();
/// assert_eq!(response.message.text(), "Hello");
/// assert_eq!(response.usage.output_tokens, 2);
/// ```
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    reasoning: String,
    reasoning_parts: Vec<ReasoningPart>,
    calls: BTreeMap<u32, PartialCall>,
    usage: Usage,
    finish: Option<FinishReason>,
    items: usize,
    fallbacks: Vec<ModelFallback>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one item into account. Runtime-only items (`Progress`, `Event`) are
    /// ignored, but for a [`RuntimeEvent::ModelFallback`], which a
    /// [`ReliableProvider`](crate::ReliableProvider) sends before a fallback model's
    /// answer: it is kept in [`ProviderResponse::fallbacks`].
    pub fn push(&mut self, item: &StreamItem) {
        self.items = self.items.saturating_add(1);
        match item {
            StreamItem::Text(text) => self.text.push_str(text),
            StreamItem::Reasoning(text) => self.reasoning.push_str(text),
            StreamItem::ReasoningPart(part) => self.reasoning_parts.push(part.clone()),
            StreamItem::ToolCallDelta(delta) => self.push_delta(delta),
            StreamItem::Usage(usage) => self.usage = *usage,
            StreamItem::Finish(reason) => self.finish = Some(reason.clone()),
            StreamItem::Event(RuntimeEvent::ModelFallback(fallback)) => {
                self.fallbacks.push(fallback.clone());
            }
            StreamItem::Progress(_) | StreamItem::Event(_) => {}
        }
    }

    fn push_delta(&mut self, delta: &ToolCallDelta) {
        let call = self.calls.entry(delta.index).or_default();
        if call.id.is_none()
            && let Some(id) = &delta.id
        {
            call.id = Some(id.clone());
        }
        if call.name.is_none()
            && let Some(name) = delta.name.as_ref().filter(|n| !n.is_empty())
        {
            call.name = Some(name.clone());
        }
        call.arguments.push_str(&delta.arguments);
    }

    /// How many items were pushed so far.
    pub fn item_count(&self) -> usize {
        self.items
    }

    /// The text gathered so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a [`StreamItem::Finish`] has been seen.
    pub fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The assembled response. Fails with [`ProviderError::Decode`] when no finish
    /// reason arrived (the stream was cut) or a tool call never got an id; a call that
    /// never got a name is kept with an empty one.
    pub fn finish(self) -> Result<ProviderResponse, ProviderError> {
        let Some(finish_reason) = self.finish else {
            return Err(ProviderError::Decode {
                what: "provider stream".into(),
                excerpt: format!(
                    "stream ended without a finish reason after {} items",
                    self.items
                ),
            });
        };
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            let Some(id) = call.id else {
                return Err(ProviderError::Decode {
                    what: format!("tool call at index {index}"),
                    excerpt: "the call never received an id".into(),
                });
            };
            // A call without a name is still the model's call: it keeps an empty name,
            // and the executor answers it with an error result the model can correct.
            let name = call.name.unwrap_or_default();
            tool_calls.push(ToolCall::new(id, name, call.arguments));
        }
        let content = if self.text.is_empty() && !tool_calls.is_empty() {
            None
        } else {
            Some(self.text)
        };
        Ok(ProviderResponse {
            fallbacks: self.fallbacks,
            message: Message::assistant_with_tool_calls(content, tool_calls)
                .with_reasoning(self.reasoning_parts),
            finish_reason,
            usage: self.usage,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
        })
    }
}

/// A whole response as the items a stream would have carried: its text (if any), one
/// [`ToolCallDelta`] per call with the whole argument string, the usage and the finish
/// reason. Feeding them to a [`StreamAccumulator`] gives the response back.
pub fn response_to_stream_items(response: &ProviderResponse) -> Vec<StreamItem> {
    let mut items = Vec::with_capacity(response.message.tool_calls.len() + 4);
    for fallback in &response.fallbacks {
        items.push(StreamItem::Event(RuntimeEvent::ModelFallback(
            fallback.clone(),
        )));
    }
    if let Some(reasoning) = response.reasoning.as_ref().filter(|t| !t.is_empty()) {
        items.push(StreamItem::Reasoning(reasoning.clone()));
    }
    for part in &response.message.reasoning {
        items.push(StreamItem::ReasoningPart(part.clone()));
    }
    if let Some(text) = response.message.content.as_ref().filter(|t| !t.is_empty()) {
        items.push(StreamItem::Text(text.clone()));
    }
    for (index, call) in response.message.tool_calls.iter().enumerate() {
        items.push(StreamItem::ToolCallDelta(ToolCallDelta {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.clone(),
        }));
    }
    items.push(StreamItem::Usage(response.usage));
    items.push(StreamItem::Finish(response.finish_reason.clone()));
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> StreamItem {
        StreamItem::ToolCallDelta(ToolCallDelta {
            index,
            id: id.map(CallId::from),
            name: name.map(str::to_owned),
            arguments: args.into(),
        })
    }

    #[test]
    fn assembles_parallel_calls_by_index_and_keeps_bad_json_raw() {
        let mut acc = StreamAccumulator::new();
        for item in [
            delta(1, Some("b"), Some("second"), ""),
            delta(0, Some("a"), Some("first"), "{\"x\":"),
            delta(1, None, None, "{\"oops"),
            delta(0, None, None, "1}"),
            StreamItem::Usage(Usage::new(1, 1, 0)),
            StreamItem::Usage(Usage::new(10, 4, 2)),
            StreamItem::Finish(FinishReason::ToolCalls),
        ] {
            acc.push(&item);
        }
        let response = acc.finish().unwrap();
        let calls = &response.message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id.as_str(), "a");
        assert_eq!(calls[0].arguments, "{\"x\":1}");
        assert_eq!(calls[1].name, "second");
        assert_eq!(calls[1].arguments, "{\"oops");
        assert!(calls[1].parsed_arguments().is_err());
        assert_eq!(response.message.content, None);
        assert_eq!(response.usage, Usage::new(10, 4, 2));
    }

    #[test]
    fn missing_finish_or_id_is_an_error() {
        let mut acc = StreamAccumulator::new();
        acc.push(&StreamItem::Text("cut".into()));
        assert!(matches!(acc.finish(), Err(ProviderError::Decode { .. })));

        let mut acc = StreamAccumulator::new();
        acc.push(&delta(0, None, Some("x"), "{}"));
        acc.push(&StreamItem::Finish(FinishReason::ToolCalls));
        assert!(matches!(acc.finish(), Err(ProviderError::Decode { .. })));
    }

    #[test]
    fn a_call_without_a_name_keeps_an_empty_one() {
        let mut acc = StreamAccumulator::new();
        acc.push(&delta(0, Some("a"), Some(""), "{}"));
        acc.push(&delta(1, Some("b"), None, "{}"));
        acc.push(&StreamItem::Finish(FinishReason::ToolCalls));
        let response = acc.finish().unwrap();
        let names: Vec<&str> = response
            .message
            .tool_calls
            .iter()
            .map(|call| call.name.as_str())
            .collect();
        assert_eq!(names, ["", ""]);
        assert_eq!(response.message.tool_calls[1].id.as_str(), "b");
    }

    #[test]
    fn response_round_trips_through_items() {
        let response = ProviderResponse {
            fallbacks: vec![ModelFallback {
                from: "a".into(),
                to: "b".into(),
                reason: "overloaded".into(),
            }],
            message: Message::assistant_with_tool_calls(
                Some("hi".into()),
                vec![ToolCall::new(CallId::from("c"), "t", "{not json")],
            ),
            finish_reason: FinishReason::ToolCalls,
            usage: Usage::new(5, 6, 1),
            reasoning: Some("think first".into()),
        };
        let mut acc = StreamAccumulator::new();
        for item in response_to_stream_items(&response) {
            acc.push(&item);
        }
        assert_eq!(acc.finish().unwrap(), response);
    }
}
