//! Draft 7 validation of run parameters, with errors an AI can correct from
//! (`path`, `message`, `schema_path` per error).
//!
//! A [`ParameterValidator`] is compiled once per blueprint (format checking on:
//! `uri`, `email`, `date-time`, …). Each failed check becomes a [`ValidationIssue`]
//! whose `path` is a JSONPath into the parameters (`$` for the root, `$.url`,
//! `$.items[0]`) and whose `schema_path` is the keyword location joined with dots
//! (`properties.url.format`).

use std::sync::LazyLock;

use jsonschema::Validator;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Most issues reported for one set of parameters; the rest are dropped.
pub const MAX_REPORTED_ISSUES: usize = 32;

static IMPLICIT_PROMPT_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "required": ["prompt"],
        "properties": {
            "prompt": { "type": "string", "minLength": 1 }
        },
        "additionalProperties": false
    })
});

/// The implicit schema of every AI agent blueprint: `{"prompt": "..."}`,
/// a non-empty string, and nothing else.
pub fn implicit_prompt_schema() -> &'static Value {
    &IMPLICIT_PROMPT_SCHEMA
}

/// One way the parameters fail the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationIssue {
    /// Where in the parameters: `$` (the root), `$.url`, `$.items[0]`.
    pub path: String,
    /// What is wrong, for people and models.
    pub message: String,
    /// The failing keyword's location in the schema, dot-joined: `properties.url.format`.
    pub schema_path: String,
}

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// What is wrong with the schema.
    pub message: String,
    /// Where in the schema (dot-joined; empty for the root).
    pub location: String,
}

/// The body of a refused run, returned with `400` by `POST /runs` and as the
/// error output of the `start_agent_run` tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParameterValidationFailure {
    /// Always `parameter_validation_failed`.
    pub error: String,
    /// `Parameters do not match agent's parameters_schema`.
    pub message: String,
    /// The blueprint the run was for.
    pub agent_name: String,
    /// Each way the parameters fail.
    pub validation_errors: Vec<ValidationIssue>,
    /// The schema the parameters must match, so the caller can correct itself.
    pub parameters_schema: Value,
}

impl ParameterValidationFailure {
    /// The failure of `agent_name`'s `schema` with `issues`.
    pub fn new(agent_name: impl Into<String>, issues: Vec<ValidationIssue>, schema: Value) -> Self {
        Self {
            error: "parameter_validation_failed".to_owned(),
            message: "Parameters do not match agent's parameters_schema".to_owned(),
            agent_name: agent_name.into(),
            validation_errors: issues,
            parameters_schema: schema,
        }
    }
}

/// A compiled Draft 7 validator of run parameters.
pub struct ParameterValidator {
    validator: Validator,
}

impl std::fmt::Debug for ParameterValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParameterValidator").finish_non_exhaustive()
    }
}

impl ParameterValidator {
    /// Compiles `schema` as Draft 7 with format validation on. A schema that is not a
    /// valid Draft 7 document is refused with the problem and where it is.
    pub fn compile(schema: &Value) -> Result<Self, SchemaProblem> {
        if !schema.is_object() {
            return Err(SchemaProblem {
                message: format!(
                    "a parameters schema must be a JSON object, not {}",
                    oxydra_executor::json_kind(schema)
                ),
                location: String::new(),
            });
        }
        jsonschema::draft7::options()
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|error| SchemaProblem {
                message: error.to_string(),
                location: dotted(error.instance_path().as_str()),
            })
    }

    /// Whether `parameters` satisfy the schema (fast path, no error details).
    pub fn is_valid(&self, parameters: &Value) -> bool {
        self.validator.is_valid(parameters)
    }

    /// Every way `parameters` fail the schema (at most [`MAX_REPORTED_ISSUES`]);
    /// empty when they are valid.
    pub fn issues(&self, parameters: &Value) -> Vec<ValidationIssue> {
        if self.validator.is_valid(parameters) {
            return Vec::new();
        }
        self.validator
            .iter_errors(parameters)
            .take(MAX_REPORTED_ISSUES)
            .map(|error| ValidationIssue {
                path: json_path(parameters, error.instance_path().as_str()),
                message: error.to_string(),
                schema_path: dotted(error.schema_path().as_str()),
            })
            .collect()
    }
}

/// Splits a JSON pointer into unescaped segments.
fn pointer_segments(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
}

/// `/properties/url/format` → `properties.url.format`.
fn dotted(pointer: &str) -> String {
    pointer_segments(pointer).collect::<Vec<_>>().join(".")
}

/// `/items/0/name` → `$.items[0].name`, walking `instance` to tell array indices from
/// object keys that look like numbers.
fn json_path(instance: &Value, pointer: &str) -> String {
    let mut path = String::from("$");
    let mut current = Some(instance);
    for segment in pointer_segments(pointer) {
        match current {
            Some(Value::Array(items)) => {
                let index = segment.parse::<usize>().ok();
                match index {
                    Some(index) => {
                        path.push_str(&format!("[{index}]"));
                        current = items.get(index);
                    }
                    None => {
                        push_key(&mut path, &segment);
                        current = None;
                    }
                }
            }
            Some(Value::Object(map)) => {
                current = map.get(&segment);
                push_key(&mut path, &segment);
            }
            _ => {
                push_key(&mut path, &segment);
                current = None;
            }
        }
    }
    path
}

fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str("['");
        path.push_str(&key.replace('\\', "\\\\").replace('\'', "\\'"));
        path.push_str("']");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crawler() -> ParameterValidator {
        ParameterValidator::compile(&json!({
            "type": "object",
            "required": ["url"],
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "email": {"type": "string", "format": "email"},
                "since": {"type": "string", "format": "date-time"},
                "depth": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn valid_parameters_have_no_issues() {
        let validator = crawler();
        let params = json!({"url": "https://example.com", "depth": 2, "tags": ["a"],
            "email": "a@b.example", "since": "2024-01-02T03:04:05Z"});
        assert!(validator.is_valid(&params));
        assert!(validator.issues(&params).is_empty());
    }

    #[test]
    fn missing_required_field_points_at_the_root() {
        let issues = crawler().issues(&json!({}));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "$");
        assert_eq!(issues[0].schema_path, "required");
        assert!(issues[0].message.contains("url"), "{}", issues[0].message);
    }

    #[test]
    fn formats_are_checked() {
        let validator = crawler();
        let issues = validator.issues(&json!({"url": "not a url"}));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "$.url");
        assert_eq!(issues[0].schema_path, "properties.url.format");
        let issues = validator.issues(&json!({"url": "https://x.example", "email": "nope"}));
        assert_eq!(issues[0].schema_path, "properties.email.format");
        let issues = validator.issues(&json!({"url": "https://x.example", "since": "yesterday"}));
        assert_eq!(issues[0].schema_path, "properties.since.format");
    }

    #[test]
    fn wrong_types_and_array_items_are_located() {
        let validator = crawler();
        let issues = validator.issues(&json!({"url": "https://x.example", "depth": "deep"}));
        assert_eq!(issues[0].path, "$.depth");
        assert_eq!(issues[0].schema_path, "properties.depth.type");
        let issues = validator.issues(&json!({"url": "https://x.example", "tags": ["a", 3]}));
        assert_eq!(issues[0].path, "$.tags[1]");
        assert_eq!(issues[0].schema_path, "properties.tags.items.type");
    }

    #[test]
    fn implicit_schema_wants_a_non_empty_prompt_only() {
        let validator = ParameterValidator::compile(implicit_prompt_schema()).unwrap();
        assert!(validator.is_valid(&json!({"prompt": "Test"})));
        assert!(!validator.is_valid(&json!({"prompt": ""})));
        let issues = validator.issues(&json!({"wrong": "field"}));
        assert!(issues.iter().any(|i| i.message.contains("prompt")));
        assert!(
            issues
                .iter()
                .any(|i| i.schema_path == "additionalProperties")
        );
        assert!(!validator.is_valid(&json!("just a string")));
    }

    #[test]
    fn invalid_schemas_are_refused_with_a_location() {
        let problem = ParameterValidator::compile(
            &json!({"type": "object", "properties": {"url": {"type": "strin"}}}),
        )
        .unwrap_err();
        assert_eq!(problem.location, "properties.url.type");
        assert!(!problem.message.is_empty());
        let problem = ParameterValidator::compile(&json!(["not", "a", "schema"])).unwrap_err();
        assert!(problem.message.contains("JSON object"));
    }

    #[test]
    fn odd_keys_are_quoted_in_paths() {
        let doc = json!({"a b": [{"0": 1}]});
        assert_eq!(json_path(&doc, "/a b/0/0"), "$['a b'][0]['0']");
        assert_eq!(json_path(&doc, ""), "$");
        assert_eq!(dotted("/properties/a~1b/type"), "properties.a/b.type");
    }
}
