//! The validation guard: raw arguments are parsed and checked against the tool's
//! schema with a validator compiled once per tool and cached.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use dashmap::DashMap;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use oxydra_tools::Tool;
use oxydra_types::{ToolCall, TypesError};
use serde_json::Value;

use crate::error::ToolExecutionError;
use crate::schema_violation::SchemaViolation;

/// The argument the model may add to any call to ask for another turn. It is stripped
/// before validation, so tools never see it.
pub const HEARTBEAT_ARGUMENT: &str = "request_heartbeat";

/// Longest rendering of a "found" value in a violation message.
const FOUND_LIMIT: usize = 120;

/// Arguments that passed the guard.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedArguments {
    /// The parsed arguments, `request_heartbeat` removed.
    pub args: Value,
    /// Whether the call carried `"request_heartbeat": true`.
    pub heartbeat: bool,
}

/// A tool's compiled schema (or why it does not compile) and its text for messages.
struct CompiledSchema {
    validator: Result<Validator, String>,
    schema_text: String,
}

/// Validators by tool name, each compiled the first time the tool is called (using
/// the draft its `$schema` declares, 2020-12 when it declares none) and then reused.
#[derive(Default)]
pub struct SchemaCache {
    entries: DashMap<String, Arc<CompiledSchema>>,
}

impl std::fmt::Debug for SchemaCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaCache")
            .field("compiled", &self.entries.len())
            .finish()
    }
}

impl SchemaCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tools have a compiled (or failed) validator cached.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn compiled(&self, tool_name: &str, tool: &dyn Tool) -> Arc<CompiledSchema> {
        if let Some(entry) = self.entries.get(tool_name) {
            return Arc::clone(entry.value());
        }
        let schema = tool.schema().parameters;
        let compiled = Arc::new(CompiledSchema {
            validator: jsonschema::validator_for(&schema).map_err(|error| error.to_string()),
            schema_text: schema.to_string(),
        });
        if let Err(message) = &compiled.validator {
            tracing::warn!(tool = tool_name, %message, "tool parameter schema does not compile");
        }
        Arc::clone(
            self.entries
                .entry(tool_name.to_owned())
                .or_insert(compiled)
                .value(),
        )
    }

    /// Parse `call`'s raw arguments, strip `request_heartbeat`, and validate the rest
    /// against `tool`'s schema.
    pub fn check(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
    ) -> Result<CheckedArguments, ToolExecutionError> {
        let compiled = self.compiled(&call.name, tool);
        let mut args = call.parsed_arguments().map_err(|error| {
            let details = match error {
                TypesError::InvalidArguments {
                    message,
                    line,
                    column,
                    ..
                } => format!(
                    "the arguments are not valid JSON: {message} (at line {line}, column {column})."
                ),
                other => format!("{other}."),
            };
            ToolExecutionError::InvalidArguments {
                tool_name: call.name.clone(),
                details,
                violations: Vec::new(),
                schema: compiled.schema_text.clone(),
            }
        })?;
        let heartbeat = strip_heartbeat(&mut args);
        let validator = match &compiled.validator {
            Ok(validator) => validator,
            Err(message) => {
                return Err(ToolExecutionError::InvalidSchema {
                    tool_name: call.name.clone(),
                    message: message.clone(),
                });
            }
        };
        if validator.is_valid(&args) {
            return Ok(CheckedArguments { args, heartbeat });
        }
        let violations: Vec<SchemaViolation> =
            validator.iter_errors(&args).map(violation).collect();
        let mut details = String::new();
        for (index, item) in violations.iter().enumerate() {
            if index > 0 {
                details.push_str("; ");
            }
            let _ = write!(details, "{item}");
        }
        details.push('.');
        Err(ToolExecutionError::InvalidArguments {
            tool_name: call.name.clone(),
            details,
            violations,
            schema: compiled.schema_text.clone(),
        })
    }
}

/// Remove `request_heartbeat` from an argument object; true when it was `true`.
pub fn strip_heartbeat(args: &mut Value) -> bool {
    match args {
        Value::Object(map) => matches!(map.remove(HEARTBEAT_ARGUMENT), Some(Value::Bool(true))),
        _ => false,
    }
}

fn violation(error: ValidationError<'_>) -> SchemaViolation {
    let kind = error.kind();
    let mut path = json_path(error.instance_path().segments());
    if let ValidationErrorKind::Required {
        property: Value::String(name),
    } = kind
    {
        push_property(&mut path, name);
    }
    SchemaViolation {
        keyword: kind.keyword().to_owned(),
        message: error.to_string(),
        expected: expected(kind),
        found: shorten(error.instance().to_string()),
        path,
    }
}

fn json_path<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::from("$");
    for segment in segments {
        match segment {
            LocationSegment::Property(name) => push_property(&mut path, &name),
            LocationSegment::Index(index) => {
                let _ = write!(path, "[{index}]");
            }
        }
    }
    path
}

fn push_property(path: &mut String, name: &str) {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(name);
    } else {
        path.push('[');
        path.push_str(&Value::String(name.to_owned()).to_string());
        path.push(']');
    }
}

fn expected(kind: &ValidationErrorKind) -> Option<String> {
    let text = match kind {
        ValidationErrorKind::Type { kind } => match kind {
            TypeKind::Single(single) => single.to_string(),
            TypeKind::Multiple(set) => set
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        },
        ValidationErrorKind::Required { property } => format!("property {property}"),
        ValidationErrorKind::Enum { options } => format!("one of {options}"),
        ValidationErrorKind::Constant { expected_value } => expected_value.to_string(),
        ValidationErrorKind::Minimum { limit } => format!(">= {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("<= {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("> {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("< {limit}"),
        ValidationErrorKind::MinLength { limit } => format!("at least {limit} characters"),
        ValidationErrorKind::MaxLength { limit } => format!("at most {limit} characters"),
        ValidationErrorKind::MinItems { limit } => format!("at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("at most {limit} items"),
        ValidationErrorKind::MinProperties { limit } => format!("at least {limit} properties"),
        ValidationErrorKind::MaxProperties { limit } => format!("at most {limit} properties"),
        ValidationErrorKind::Pattern { pattern } => format!("a string matching /{pattern}/"),
        ValidationErrorKind::Format { format } => format!("format \"{format}\""),
        ValidationErrorKind::AdditionalProperties { .. } => {
            "only the properties the schema declares".to_owned()
        }
        _ => return None,
    };
    Some(text)
}

fn shorten(text: String) -> String {
    if text.len() <= FOUND_LIMIT {
        return text;
    }
    let mut end = FOUND_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut: Cow<'_, str> = Cow::Borrowed(text.get(..end).unwrap_or_default());
    format!("{cut}… ({} bytes)", text.len())
}

/// What kind of JSON value `value` is, for an error message: `null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object`.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use oxydra_tools::{ToolContext, ToolError, ToolOutput};
    use oxydra_types::{CallId, SafetyTier, ToolSchema};
    use serde_json::json;

    struct Schema(Value);

    #[async_trait]
    impl Tool for Schema {
        fn schema(&self) -> ToolSchema {
            ToolSchema::new("t", "test", self.0.clone())
        }
        fn safety_tier(&self) -> SafetyTier {
            SafetyTier::ReadOnly
        }
        async fn execute(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    fn call(args: &str) -> ToolCall {
        ToolCall::new(CallId::from("c"), "t", args)
    }

    #[test]
    fn nested_paths_and_expected_values() {
        let tool = Schema(json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {
                "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}}}
        }));
        let cache = SchemaCache::new();
        let err = cache
            .check(&call(r#"{"items":[{"n":1},{"n":0}]}"#), &tool)
            .unwrap_err();
        let ToolExecutionError::InvalidArguments { violations, .. } = err else {
            panic!("expected InvalidArguments");
        };
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path, "$.items[1].n");
        assert_eq!(violations[0].keyword, "minimum");
        assert_eq!(violations[0].expected.as_deref(), Some(">= 1"));
        assert_eq!(violations[0].found, "0");
    }

    #[test]
    fn declared_draft_is_used_and_validator_is_cached() {
        // Draft 4 reads `exclusiveMaximum` as a boolean; 2020-12 would reject `true` there.
        let tool = Schema(json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": true}}
        }));
        let cache = SchemaCache::new();
        assert!(cache.check(&call(r#"{"n":4}"#), &tool).is_ok());
        assert!(cache.check(&call(r#"{"n":5}"#), &tool).is_err());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn heartbeat_is_stripped_before_validation() {
        let tool = Schema(json!({"type": "object", "additionalProperties": false}));
        let cache = SchemaCache::new();
        let checked = cache
            .check(&call(r#"{"request_heartbeat": true}"#), &tool)
            .unwrap();
        assert!(checked.heartbeat);
        assert_eq!(checked.args, json!({}));
    }

    #[test]
    fn odd_property_names_are_quoted_and_long_values_shortened() {
        assert_eq!(
            json_path([LocationSegment::Property("a b".into())].into_iter()),
            "$[\"a b\"]"
        );
        let long = "x".repeat(500);
        assert!(shorten(long).ends_with("(500 bytes)"));
    }
}
