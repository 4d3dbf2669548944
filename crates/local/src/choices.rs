//! Argument choices: the values a string argument of a tool call is held to, such as
//! the paths a small model may pass to `file_read`.
//!
//! A small model copies the placeholder style of its training data (`/path/to/file.txt`)
//! more readily than the path in the question. Given the real candidates, the tool's
//! parameter schema gets an `enum` of them for this request only: the grammar then lets
//! the model write one of them and nothing else, and the tool list in the prompt shows
//! them. The tool's own schema, and so what its executor accepts, stays as it is.
//!
//! The candidates come from an [`ArgumentChoices`] source asked once per request (on a
//! blocking thread) with the request's messages, so a file written in one turn is a
//! candidate in the next, and a path the user names can be offered even where the
//! source cannot list everything.

use std::fmt::Debug;

use oxydra_types::{Message, ToolSchema};
use serde_json::{Value, json};

/// The values one string argument of one tool is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentChoice {
    /// The tool's name.
    pub tool: String,
    /// The argument's name (a property of the tool's parameter schema).
    pub argument: String,
    /// The values the argument may take; empty: the argument is left free.
    pub values: Vec<String>,
}

impl ArgumentChoice {
    /// `tool`'s `argument` held to `values`.
    pub fn new(
        tool: impl Into<String>,
        argument: impl Into<String>,
        values: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            tool: tool.into(),
            argument: argument.into(),
            values: values.into_iter().map(Into::into).collect(),
        }
    }
}

/// Where the choices of a request come from (for example a listing of the workspace,
/// taken anew for each request). Called on a blocking thread: it may read the disk.
pub trait ArgumentChoices: Send + Sync + Debug {
    /// The choices for the next request, whose conversation is `messages`.
    fn choices(&self, messages: &[Message]) -> Vec<ArgumentChoice>;
}

/// A fixed set of choices.
impl ArgumentChoices for Vec<ArgumentChoice> {
    fn choices(&self, _messages: &[Message]) -> Vec<ArgumentChoice> {
        self.clone()
    }
}

/// `tools` with `choices` applied: each chosen argument that the tool's schema has as
/// a property gets an `enum` of its values (and `type: string`). Choices for unknown
/// tools or arguments, and choices without values, change nothing.
pub fn apply(tools: &[ToolSchema], choices: &[ArgumentChoice]) -> Vec<ToolSchema> {
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            for choice in choices
                .iter()
                .filter(|c| c.tool == tool.name && !c.values.is_empty())
            {
                let property = tool
                    .parameters
                    .get_mut("properties")
                    .and_then(|p| p.get_mut(&choice.argument))
                    .and_then(Value::as_object_mut);
                if let Some(property) = property {
                    property.insert("type".into(), json!("string"));
                    property.insert("enum".into(), json!(choice.values));
                }
            }
            tool
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_tool() -> ToolSchema {
        ToolSchema::new(
            "file_read",
            "Read a file",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path of the file."},
                    "limit": {"type": "integer"}
                },
                "required": ["path"]
            }),
        )
    }

    #[test]
    fn a_chosen_argument_gets_an_enum_and_keeps_its_description() {
        let choices = vec![ArgumentChoice::new(
            "file_read",
            "path",
            ["a.md", "b/c.txt"],
        )];
        let tools = apply(&[read_tool()], &choices.choices(&[]));
        assert_eq!(
            tools[0].parameters["properties"]["path"],
            json!({"type": "string", "description": "Path of the file.", "enum": ["a.md", "b/c.txt"]})
        );
        assert_eq!(
            tools[0].parameters["properties"]["limit"],
            json!({"type": "integer"})
        );
    }

    #[test]
    fn unknown_tools_arguments_and_empty_choices_change_nothing() {
        let tool = read_tool();
        for choice in [
            ArgumentChoice::new("file_write", "path", ["a"]),
            ArgumentChoice::new("file_read", "nope", ["a"]),
            ArgumentChoice::new("file_read", "path", Vec::<String>::new()),
        ] {
            assert_eq!(
                apply(std::slice::from_ref(&tool), &[choice]),
                vec![tool.clone()]
            );
        }
        let odd = ToolSchema::new("file_read", "", json!(true));
        let choice = ArgumentChoice::new("file_read", "path", ["a"]);
        assert_eq!(apply(std::slice::from_ref(&odd), &[choice]), vec![odd]);
    }
}
