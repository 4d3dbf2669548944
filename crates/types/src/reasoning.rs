//! Reasoning state a model produced that its provider must get back unchanged.
//!
//! Reasoning models return opaque state beside their answer: Anthropic's `thinking`
//! blocks with a signature and `redacted_thinking` blocks, OpenAI Responses `reasoning`
//! items with `encrypted_content`, Gemini's `thoughtSignature`s. A provider rejects the
//! next turn (or silently loses its chain of thought) when that state is dropped or
//! altered, so an assistant [`Message`](crate::Message) carries it in
//! [`reasoning`](crate::Message::reasoning), memory stores it, and the provider that made
//! it sends it back byte for byte. A provider ignores the parts of other providers.

use serde::{Deserialize, Serialize};

use crate::ids::CallId;

/// One piece of reasoning state, tagged by its `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningPart {
    /// An Anthropic `thinking` block: the visible thinking text and its signature.
    Thinking {
        /// The thinking text, as streamed.
        text: String,
        /// The block's signature (from `signature_delta`), sent back unchanged.
        #[serde(default)]
        signature: String,
    },
    /// An Anthropic `redacted_thinking` block: encrypted thinking, sent back unchanged.
    RedactedThinking {
        /// The opaque `data` blob.
        data: String,
    },
    /// An OpenAI Responses `reasoning` output item.
    Reasoning {
        /// The item's id (`rs_…`).
        id: String,
        /// Its summary texts, one per summary part.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        /// The encrypted reasoning (`include: ["reasoning.encrypted_content"]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// A Gemini `thoughtSignature`, with the part it came on: the function call
    /// `call_id`, or the message's text when `call_id` is `None`.
    ThoughtSignature {
        /// The call whose `functionCall` part carried the signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<CallId>,
        /// The opaque signature.
        signature: String,
    },
}

impl ReasoningPart {
    /// The human-readable reasoning text of this part (thinking text or summaries),
    /// empty for parts that carry only opaque state.
    pub fn visible_text(&self) -> String {
        match self {
            Self::Thinking { text, .. } => text.clone(),
            Self::Reasoning { summary, .. } => summary.join("\n\n"),
            Self::RedactedThinking { .. } | Self::ThoughtSignature { .. } => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_round_trips_with_its_tag() {
        let parts = vec![
            ReasoningPart::Thinking {
                text: "let me see".into(),
                signature: "EqQBCkgI".into(),
            },
            ReasoningPart::RedactedThinking {
                data: "EmwKAhgBEgy".into(),
            },
            ReasoningPart::Reasoning {
                id: "rs_1".into(),
                summary: vec!["**Plan**".into()],
                encrypted_content: Some("gAAAA".into()),
            },
            ReasoningPart::ThoughtSignature {
                call_id: Some(CallId::from("call_0")),
                signature: "CiQB".into(),
            },
            ReasoningPart::ThoughtSignature {
                call_id: None,
                signature: "CiQC".into(),
            },
        ];
        for part in parts {
            let json = serde_json::to_value(&part).unwrap();
            assert!(json.get("type").is_some(), "{json}");
            assert_eq!(serde_json::from_value::<ReasoningPart>(json).unwrap(), part);
        }
        let thinking = serde_json::json!({"type": "thinking", "text": "t", "signature": "s"});
        assert_eq!(
            serde_json::from_value::<ReasoningPart>(thinking).unwrap(),
            ReasoningPart::Thinking {
                text: "t".into(),
                signature: "s".into()
            }
        );
    }

    #[test]
    fn visible_text_shows_thinking_and_summaries_only() {
        let summary = ReasoningPart::Reasoning {
            id: "rs".into(),
            summary: vec!["a".into(), "b".into()],
            encrypted_content: None,
        };
        assert_eq!(summary.visible_text(), "a\n\nb");
        let redacted = ReasoningPart::RedactedThinking { data: "x".into() };
        assert_eq!(redacted.visible_text(), "");
    }
}
