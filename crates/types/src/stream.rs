//! What a provider stream (and the runtime's streaming form) yields.

use serde::{Deserialize, Serialize};

use crate::event::RuntimeEvent;
use crate::ids::CallId;
use crate::progress::RuntimeProgressEvent;
use crate::reasoning::ReasoningPart;
use crate::usage::Usage;

/// A fragment of a streamed tool call. Fragments with the same `index` belong to one
/// call: the first usually carries `id` and `name`, and the `arguments` fragments
/// concatenate to the call's raw argument string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Position of the call in the assistant message.
    pub index: u32,
    /// The call id, when this fragment carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<CallId>,
    /// The tool name, when this fragment carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the raw argument string (may be empty).
    #[serde(default)]
    pub arguments: String,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model wants tool calls run.
    ToolCalls,
    /// The output-token limit cut the answer.
    Length,
    /// The provider's content filter stopped the answer.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// Any other reason, as the provider named it.
    Other(String),
}

/// One item of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamItem {
    /// A piece of assistant text.
    Text(String),
    /// A piece of the model's reasoning (`reasoning_content` / `reasoning` on
    /// OpenAI-compatible servers): kept beside the answer, never part of its text.
    Reasoning(String),
    /// A whole piece of reasoning state the provider must get back (a thinking block
    /// with its signature, a reasoning item, a thought signature), sent once it is
    /// complete; it joins the assistant message's `reasoning`.
    ReasoningPart(ReasoningPart),
    /// A piece of a tool call.
    ToolCallDelta(ToolCallDelta),
    /// Token usage (usually once, near the end).
    Usage(Usage),
    /// The model finished, and why. Providers send this last.
    Finish(FinishReason),
    /// The runtime moved to a new step (never sent by providers).
    Progress(RuntimeProgressEvent),
    /// A lifecycle event of the runtime (never sent by providers).
    Event(RuntimeEvent),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::RuntimeProgressKind;

    #[test]
    fn every_stream_item_round_trips() {
        let items = vec![
            StreamItem::Text("hel".into()),
            StreamItem::Reasoning("thinking".into()),
            StreamItem::ReasoningPart(ReasoningPart::RedactedThinking { data: "x".into() }),
            StreamItem::ToolCallDelta(ToolCallDelta {
                index: 1,
                id: Some(CallId::from("call_9")),
                name: Some("file_read".into()),
                arguments: "{\"pa".into(),
            }),
            StreamItem::ToolCallDelta(ToolCallDelta {
                index: 1,
                id: None,
                name: None,
                arguments: String::new(),
            }),
            StreamItem::Usage(Usage::new(1, 2, 0)),
            StreamItem::Finish(FinishReason::ToolCalls),
            StreamItem::Finish(FinishReason::Other("pause_turn".into())),
            StreamItem::Progress(RuntimeProgressEvent::new(
                RuntimeProgressKind::ProviderCall,
                1,
                8,
            )),
            StreamItem::Event(RuntimeEvent::TextDelta { text: "x".into() }),
        ];
        for item in items {
            let json = serde_json::to_string(&item).unwrap();
            let back: StreamItem = serde_json::from_str(&json).unwrap();
            assert_eq!(back, item, "{json}");
        }
    }
}
