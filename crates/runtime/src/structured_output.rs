//! Typed final output: the model answers by calling a `final_answer` tool whose
//! parameters are the answer's JSON Schema. Its arguments are validated like any
//! tool's (JSON path, failed keyword, the schema); an invalid answer goes back to the
//! model as the call's failure, and the run goes on within its budget. A model that
//! answers in plain text instead has the text taken as the answer when it is valid
//! JSON of the schema, and is asked to call the tool otherwise.

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_executor::SchemaCache;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, parameters_schema};
use oxydra_types::{CallId, Message, SafetyTier, TOOL_FAILURE_PREFIX, ToolCall, ToolSchema};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::RuntimeError;

/// The name of the tool the model gives a structured answer through.
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// The property a non-object answer is wrapped in: tool parameters are objects.
const WRAPPED_PROPERTY: &str = "value";

/// A check beyond the schema (deserializing into the caller's type).
type ExtraCheck = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The JSON Schema a run's final answer must satisfy.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Value,
    tool: Arc<FinalAnswerTool>,
    wrapped: bool,
    validators: Arc<SchemaCache>,
    extra: Option<ExtraCheck>,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// The answer must validate against `schema` (JSON Schema, draft 2020-12 unless
    /// it declares another).
    ///
    /// # Errors
    /// [`RuntimeError::Config`] when `schema` is not a valid JSON Schema.
    pub fn new(schema: Value) -> Result<Self, RuntimeError> {
        if let Err(error) = jsonschema::meta::validate(&schema) {
            return Err(RuntimeError::Config(format!(
                "the output schema is not a valid JSON Schema: {error}"
            )));
        }
        if let Err(error) = jsonschema::validator_for(&schema) {
            return Err(RuntimeError::Config(format!(
                "the output schema does not compile: {error}"
            )));
        }
        let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
        let parameters = if is_object {
            schema.clone()
        } else {
            serde_json::json!({
                "type": "object",
                "properties": { WRAPPED_PROPERTY: schema },
                "required": [WRAPPED_PROPERTY],
                "additionalProperties": false,
            })
        };
        let tool = FinalAnswerTool {
            schema: ToolSchema::new(
                FINAL_ANSWER_TOOL,
                "Give your final answer by calling this tool with it as the arguments. \
                 Call it once, when you are done; nothing else ends the task.",
                parameters,
            ),
        };
        Ok(Self {
            schema,
            tool: Arc::new(tool),
            wrapped: !is_object,
            validators: Arc::new(SchemaCache::new()),
            extra: None,
        })
    }

    /// The schema of `T` (as tools publish theirs), and answers must also
    /// deserialize into `T`.
    ///
    /// # Errors
    /// [`RuntimeError::Config`] when the derived schema does not compile.
    pub fn of<T: JsonSchema + DeserializeOwned + 'static>() -> Result<Self, RuntimeError> {
        let mut output = Self::new(parameters_schema::<T>())?;
        output.extra = Some(Arc::new(|value: &Value| {
            T::deserialize(value)
                .map(drop)
                .map_err(|error| error.to_string())
        }));
        Ok(output)
    }

    /// The schema answers must satisfy.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The `final_answer` tool's schema, offered to the model with the others.
    pub(crate) fn tool_schema(&self) -> ToolSchema {
        self.tool.schema.clone()
    }

    /// The answer a `final_answer` call gives, or the failure message the model gets.
    pub(crate) fn check_call(&self, call: &ToolCall) -> Result<Value, String> {
        let checked = self
            .validators
            .check(call, self.tool.as_ref())
            .map_err(|error| format!("{TOOL_FAILURE_PREFIX}: {error}"))?;
        let value = if self.wrapped {
            match checked.args {
                Value::Object(mut map) => map.remove(WRAPPED_PROPERTY).unwrap_or(Value::Null),
                other => other,
            }
        } else {
            checked.args
        };
        if let Some(extra) = &self.extra {
            extra(&value).map_err(|error| {
                format!("{TOOL_FAILURE_PREFIX}: the answer does not fit: {error}")
            })?;
        }
        Ok(value)
    }

    /// A plain-text answer taken as the structured one when it is (fenced) JSON that
    /// passes; otherwise why not.
    pub(crate) fn check_text(&self, text: &str) -> Result<Value, String> {
        let json = strip_fence(text.trim());
        let value: Value = serde_json::from_str(json).map_err(|_| {
            "your answer must be given by calling the `final_answer` tool".to_owned()
        })?;
        let arguments = if self.wrapped {
            serde_json::json!({ WRAPPED_PROPERTY: value })
        } else {
            value
        };
        let call = ToolCall::new(
            CallId::from("text_answer"),
            FINAL_ANSWER_TOOL,
            arguments.to_string(),
        );
        self.check_call(&call)
    }

    /// The message that sends a plain-text answer back.
    pub(crate) fn nudge(problem: &str) -> Message {
        Message::user(format!(
            "{problem}. Call the `{FINAL_ANSWER_TOOL}` tool with your final answer as arguments that match its schema."
        ))
    }
}

/// Text inside a Markdown code fence (```json … ```), or the text itself.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// The `final_answer` tool, only for its schema: the runtime handles its calls.
struct FinalAnswerTool {
    schema: ToolSchema,
}

#[async_trait]
impl Tool for FinalAnswerTool {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::from(args))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Person {
        name: String,
        age: u8,
    }

    fn call(args: Value) -> ToolCall {
        ToolCall::new(CallId::from("c1"), FINAL_ANSWER_TOOL, args.to_string())
    }

    #[test]
    fn an_answer_of_the_schema_passes_and_others_say_why_not() {
        let output = OutputSchema::of::<Person>().unwrap();
        assert_eq!(
            output.tool_schema().parameters["required"],
            json!(["name", "age"])
        );
        let value = output
            .check_call(&call(json!({"name": "Ada", "age": 36})))
            .unwrap();
        assert_eq!(value, json!({"name": "Ada", "age": 36}));
        let error = output
            .check_call(&call(json!({"name": "Ada"})))
            .unwrap_err();
        assert!(error.starts_with(TOOL_FAILURE_PREFIX), "{error}");
        assert!(error.contains("age"), "{error}");
        let error = output
            .check_call(&call(json!({"name": "Ada", "age": 300})))
            .unwrap_err();
        assert!(error.contains("age"), "{error}");
        let garbage = ToolCall::new(CallId::from("c2"), FINAL_ANSWER_TOOL, "{not json");
        assert!(output.check_call(&garbage).is_err());
    }

    #[test]
    fn non_object_answers_are_wrapped_and_unwrapped() {
        let output = OutputSchema::of::<Vec<u32>>().unwrap();
        let parameters = output.tool_schema().parameters;
        assert_eq!(parameters["type"], "object");
        assert_eq!(parameters["required"], json!(["value"]));
        assert_eq!(
            output.check_call(&call(json!({"value": [1, 2]}))).unwrap(),
            json!([1, 2])
        );
        assert!(output.check_call(&call(json!({"value": ["x"]}))).is_err());
        assert_eq!(output.check_text("```json\n[3]\n```").unwrap(), json!([3]));
    }

    #[test]
    fn text_answers_count_when_they_are_valid_json() {
        let output = OutputSchema::of::<Person>().unwrap();
        assert_eq!(
            output.check_text(r#" {"name":"Bo","age":3} "#).unwrap(),
            json!({"name": "Bo", "age": 3})
        );
        assert!(
            output
                .check_text("Bo is 3")
                .unwrap_err()
                .contains("final_answer")
        );
        assert!(output.check_text(r#"{"name":"Bo"}"#).is_err());
    }

    #[test]
    fn an_invalid_schema_is_refused() {
        let error = OutputSchema::new(json!({"type": "no-such-type"})).unwrap_err();
        assert!(error.to_string().contains("output schema"), "{error}");
        assert!(OutputSchema::new(json!({"type": "string", "minLength": 2})).is_ok());
    }
}
