//! Progress events: what the runtime is doing right now.

use serde::{Deserialize, Serialize};

use crate::error::TypesError;

/// The step a [`RuntimeProgressEvent`] announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeProgressKind {
    /// About to request a response from the provider.
    ProviderCall,
    /// About to run these tools (in request order).
    ToolExecution {
        /// Names of the tools about to run.
        tool_names: Vec<String>,
    },
    /// Condensing old turns into the rolling summary.
    RollingSummary,
}

impl RuntimeProgressKind {
    /// The kind's wire name: `provider_call`, `tool_execution` or `rolling_summary`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::ProviderCall => "provider_call",
            Self::ToolExecution { .. } => "tool_execution",
            Self::RollingSummary => "rolling_summary",
        }
    }
}

/// A progress event, emitted by the runtime loop at each step it takes.
///
/// Serialised flat, as the JSONL `progress` event carries it: `kind` is a string and
/// `tool_names` appears for `tool_execution` only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ProgressWire", try_from = "ProgressWire")]
pub struct RuntimeProgressEvent {
    /// What is happening.
    pub kind: RuntimeProgressKind,
    /// A line for people, such as `[2/8] Executing tools: file_read`.
    pub message: String,
    /// The current turn, from 1.
    pub turn: usize,
    /// The turn budget.
    pub max_turns: usize,
}

impl RuntimeProgressEvent {
    /// An event with the standard message for `kind` at `turn` of `max_turns`.
    pub fn new(kind: RuntimeProgressKind, turn: usize, max_turns: usize) -> Self {
        let what = match &kind {
            RuntimeProgressKind::ProviderCall => "Calling the model".to_owned(),
            RuntimeProgressKind::ToolExecution { tool_names } => {
                format!("Executing tools: {}", tool_names.join(", "))
            }
            RuntimeProgressKind::RollingSummary => "Summarising older turns".to_owned(),
        };
        Self {
            message: format!("[{turn}/{max_turns}] {what}"),
            kind,
            turn,
            max_turns,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct ProgressWire {
    kind: String,
    message: String,
    turn: usize,
    max_turns: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_names: Option<Vec<String>>,
}

impl From<RuntimeProgressEvent> for ProgressWire {
    fn from(event: RuntimeProgressEvent) -> Self {
        let kind = event.kind.as_str().to_owned();
        let tool_names = match event.kind {
            RuntimeProgressKind::ToolExecution { tool_names } => Some(tool_names),
            _ => None,
        };
        Self {
            kind,
            message: event.message,
            turn: event.turn,
            max_turns: event.max_turns,
            tool_names,
        }
    }
}

impl TryFrom<ProgressWire> for RuntimeProgressEvent {
    type Error = TypesError;

    fn try_from(wire: ProgressWire) -> Result<Self, Self::Error> {
        let kind = match wire.kind.as_str() {
            "provider_call" => RuntimeProgressKind::ProviderCall,
            "tool_execution" => RuntimeProgressKind::ToolExecution {
                tool_names: wire.tool_names.unwrap_or_default(),
            },
            "rolling_summary" => RuntimeProgressKind::RollingSummary,
            _ => return Err(TypesError::UnknownProgressKind(wire.kind)),
        };
        Ok(Self {
            kind,
            message: wire.message,
            turn: wire.turn,
            max_turns: wire.max_turns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_follow_the_seed_format() {
        let event = RuntimeProgressEvent::new(
            RuntimeProgressKind::ToolExecution {
                tool_names: vec!["file_read".into(), "web_fetch".into()],
            },
            2,
            8,
        );
        assert_eq!(event.message, "[2/8] Executing tools: file_read, web_fetch");
        let call = RuntimeProgressEvent::new(RuntimeProgressKind::ProviderCall, 1, 8);
        assert_eq!(call.message, "[1/8] Calling the model");
    }

    #[test]
    fn serialises_flat_and_round_trips() {
        let event = RuntimeProgressEvent::new(
            RuntimeProgressKind::ToolExecution {
                tool_names: vec!["file_read".into()],
            },
            2,
            8,
        );
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"kind":"tool_execution","message":"[2/8] Executing tools: file_read",
                "turn":2,"max_turns":8,"tool_names":["file_read"]})
        );
        assert_eq!(
            serde_json::from_value::<RuntimeProgressEvent>(value).unwrap(),
            event
        );
        for kind in [
            RuntimeProgressKind::ProviderCall,
            RuntimeProgressKind::RollingSummary,
        ] {
            let event = RuntimeProgressEvent::new(kind, 3, 8);
            let json = serde_json::to_string(&event).unwrap();
            assert!(!json.contains("tool_names"));
            assert_eq!(
                serde_json::from_str::<RuntimeProgressEvent>(&json).unwrap(),
                event
            );
        }
    }

    #[test]
    fn unknown_kind_is_rejected() {
        let err = serde_json::from_str::<RuntimeProgressEvent>(
            r#"{"kind":"dreaming","message":"","turn":1,"max_turns":8}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown progress kind `dreaming`"));
    }
}
