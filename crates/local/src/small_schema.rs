//! The tools as a small model is offered them: only the arguments a call needs.
//!
//! A small model fills every argument a schema shows, optional or not: offered
//! `file_read`'s `offset` and `limit`, SmolLM2-135M writes `"limit": 1` and reads one
//! line of the file it was asked about. So a small model's tool list and grammar hold
//! each tool's required arguments only, plus the arguments the request's
//! [argument choices](crate::ArgumentChoices) hold to a set of values (a `path` the
//! workspace offers); those become required, since any of their values is a good
//! one. The tool's own schema, and so what its executor accepts, stays as it is: an
//! argument left out takes the tool's default.

use oxydra_types::ToolSchema;
use serde_json::{Map, Value};

use crate::choices::ArgumentChoice;

/// `tools` with only their required arguments and the arguments `choices` hold to
/// values (added to `required`). A schema that is not an object with `properties`
/// is left as it is.
pub fn required_only(tools: &[ToolSchema], choices: &[ArgumentChoice]) -> Vec<ToolSchema> {
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            let chosen: Vec<&str> = choices
                .iter()
                .filter(|c| c.tool == tool.name && !c.values.is_empty())
                .map(|c| c.argument.as_str())
                .collect();
            if let Some(parameters) = tool.parameters.as_object_mut() {
                trim(parameters, &chosen);
            }
            tool
        })
        .collect()
}

/// Keeps the properties of `parameters` that are required or `chosen`, and requires
/// them all, in the order of the properties.
fn trim(parameters: &mut Map<String, Value>, chosen: &[&str]) {
    let required: Vec<String> = parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let Some(properties) = parameters
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    properties.retain(|name, _| required.contains(name) || chosen.contains(&name.as_str()));
    let kept: Vec<Value> = properties
        .keys()
        .map(|name| Value::String(name.clone()))
        .collect();
    if kept.is_empty() {
        parameters.remove("required");
    } else {
        parameters.insert("required".into(), Value::Array(kept));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_tool() -> ToolSchema {
        ToolSchema::new(
            "file_read",
            "Read a file",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": ["integer", "null"]},
                    "limit": {"type": ["integer", "null"]}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        )
    }

    fn list_tool() -> ToolSchema {
        ToolSchema::new(
            "file_list",
            "List a directory",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "default": "."},
                    "recursive": {"type": "boolean", "default": false}
                }
            }),
        )
    }

    #[test]
    fn the_optional_arguments_are_gone_and_the_required_stay() {
        let tools = required_only(&[read_tool()], &[]);
        assert_eq!(
            tools[0].parameters,
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            })
        );
        assert_eq!(tools[0].name, "file_read");
    }

    #[test]
    fn a_chosen_optional_argument_stays_and_becomes_required() {
        let choices = [
            ArgumentChoice::new("file_list", "path", [".", "inbox"]),
            // No values: the argument is free, so it is as optional as before.
            ArgumentChoice::new("file_list", "recursive", Vec::<String>::new()),
            // Another tool's choice changes nothing here.
            ArgumentChoice::new("file_read", "recursive", ["x"]),
        ];
        let tools = required_only(&[list_tool()], &choices);
        assert_eq!(
            tools[0].parameters,
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "default": "."}},
                "required": ["path"]
            })
        );
        // Without a choice, a tool with no required argument takes none.
        let bare = required_only(&[list_tool()], &[]);
        assert_eq!(
            bare[0].parameters,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn odd_schemas_pass_through() {
        for parameters in [
            json!(true),
            json!({"type": "object"}),
            json!({"type": "object", "properties": [1, 2], "required": ["a"]}),
            json!({"type": "object", "properties": {"a": {}}, "required": "a"}),
        ] {
            let tool = ToolSchema::new("t", "", parameters.clone());
            let out = required_only(&[tool], &[]);
            if parameters.get("required").is_some_and(Value::is_string) {
                // A malformed `required` keeps nothing optional.
                assert_eq!(out[0].parameters["properties"], json!({}));
            } else {
                assert_eq!(out[0].parameters, parameters);
            }
        }
    }
}
