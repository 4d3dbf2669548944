//! Tool calls, tool schemas and safety tiers.

use serde::{Deserialize, Serialize};

use crate::error::TypesError;
use crate::ids::CallId;

/// How every failed tool call's result message begins (`Tool execution failed: …`).
/// The model corrects itself from these; the Anthropic client marks them `is_error`.
pub const TOOL_FAILURE_PREFIX: &str = "Tool execution failed";

/// How much harm a tool can do, which decides how the executor schedules it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyTier {
    /// Reads only; contiguous read-only calls run in parallel.
    ReadOnly,
    /// Changes the workspace or the world; runs alone, in request order.
    SideEffecting,
    /// Can do anything (a shell); runs alone and asks for consent by default.
    Privileged,
}

impl SafetyTier {
    /// The tier's wire name: `read_only`, `side_effecting` or `privileged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::SideEffecting => "side_effecting",
            Self::Privileged => "privileged",
        }
    }
}

/// A call the model asked for.
///
/// `arguments` is the raw string exactly as the provider sent it — it may be invalid
/// JSON, and the executor reports that to the model rather than guessing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call.
    pub id: CallId,
    /// The tool's name.
    pub name: String,
    /// The arguments, raw.
    pub arguments: String,
}

impl ToolCall {
    /// A call with the given id, tool name and raw arguments.
    pub fn new(id: CallId, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The arguments parsed as JSON. An empty string reads as `{}` (several providers
    /// send nothing for a call without parameters); anything else must be valid JSON.
    pub fn parsed_arguments(&self) -> Result<serde_json::Value, TypesError> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(serde_json::Map::new()));
        }
        serde_json::from_str(&self.arguments).map_err(|error| TypesError::InvalidArguments {
            tool: self.name.clone(),
            message: error.to_string(),
            line: error.line(),
            column: error.column(),
        })
    }
}

/// What a tool tells the model about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its parameters, as a JSON Schema object.
    pub parameters: serde_json::Value,
}

impl ToolSchema {
    /// A schema from its parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_arguments_keeps_raw_and_reports_position() {
        let call = ToolCall::new(CallId::from("c"), "file_read", "{\"path\": ");
        assert_eq!(call.arguments, "{\"path\": ");
        match call.parsed_arguments() {
            Err(TypesError::InvalidArguments {
                tool, line, column, ..
            }) => {
                assert_eq!(tool, "file_read");
                assert_eq!(line, 1);
                assert_eq!(column, 9);
            }
            other => panic!("expected InvalidArguments, got {other:?}"),
        }
    }

    #[test]
    fn empty_arguments_read_as_empty_object() {
        let call = ToolCall::new(CallId::from("c"), "now", "  ");
        assert_eq!(call.parsed_arguments().unwrap(), serde_json::json!({}));
    }

    #[test]
    fn tiers_and_calls_round_trip() {
        for tier in [
            SafetyTier::ReadOnly,
            SafetyTier::SideEffecting,
            SafetyTier::Privileged,
        ] {
            let json = serde_json::to_string(&tier).unwrap();
            assert_eq!(json, format!("\"{}\"", tier.as_str()));
            assert_eq!(serde_json::from_str::<SafetyTier>(&json).unwrap(), tier);
        }
        let call = ToolCall::new(CallId::from("c"), "x", "{\"a\":1}");
        let back: ToolCall = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
        assert_eq!(back, call);
        let schema = ToolSchema::new("x", "does x", serde_json::json!({"type":"object"}));
        let back: ToolSchema =
            serde_json::from_str(&serde_json::to_string(&schema).unwrap()).unwrap();
        assert_eq!(back, schema);
    }
}
