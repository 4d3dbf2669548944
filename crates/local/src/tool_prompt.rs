//! The tool prompt for models whose chat template knows no tools: the instructions,
//! the tool list and the calls of earlier turns, written as SmolLM2 was tuned to read
//! and write them (its function-calling system prompt, a `<tools>` JSON list, calls
//! as `<tool_call>[{"name": …, "arguments": {…}}]</tool_call>`, results as a user turn
//! in `<tool_response>` tags), which Hermes-style ChatML models read as well.
//!
//! The tool list is compact: small models run with small contexts, and a schema's
//! annotations (`$schema`, `additionalProperties`, bounds, long descriptions) cost
//! hundreds of tokens that teach them nothing.

use oxydra_types::{ToolCall, ToolSchema};
use serde_json::{Map, Value, json};

/// The most characters of a description kept in the compact tool list.
const DESCRIPTION_CHARS: usize = 160;

/// The instructions that teach a model to call `tools`, in the wording of SmolLM2's
/// function-calling training, with the tool list in [`compact_tool`] form.
pub fn tool_instructions(tools: &[ToolSchema]) -> String {
    let listed = tools
        .iter()
        .map(|tool| compact_tool_text(&compact_tool(tool)))
        .collect::<Vec<_>>();
    let mut text = String::from(
        "You are an expert in composing functions. You are given a question and a set of \
         possible functions. Based on the question, you will need to make one or more \
         function/tool calls to achieve the purpose.\n\
         You have access to the following tools:\n<tools>",
    );
    text.push('[');
    text.push_str(&listed.join(", "));
    text.push(']');
    text.push_str(
        "</tools>\n\nThe output MUST strictly adhere to the following format. Please make \
         sure the parameter type is correct. If no function call is needed, answer the \
         question in plain text.\n<tool_call>[\n\
         {\"name\": \"func_name1\", \"arguments\": {\"argument1\": \"value1\", \"argument2\": \"value2\"}},\n\
         ... (more tool calls as required)\n]</tool_call>",
    );
    text
}

/// The system turn of a conversation with `tools`: the tool instructions first, as
/// the model was tuned to see them, then the caller's own system text.
pub fn system_with_tools(system: Option<&str>, tools: &[ToolSchema]) -> String {
    let mut text = tool_instructions(tools);
    if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
        text.push_str("\n\n");
        text.push_str(system);
    }
    text
}

/// Earlier calls as the model writes them: one `<tool_call>` block holding the list.
pub fn calls_text(calls: &[ToolCall]) -> String {
    let listed = calls
        .iter()
        .map(|call| {
            // `name` before `arguments`, as in training (a JSON object would sort them).
            format!(
                "{{\"name\": {}, \"arguments\": {}}}",
                Value::String(call.name.clone()),
                arguments_object(&call.arguments)
            )
        })
        .collect::<Vec<_>>();
    format!("<tool_call>[\n{}\n]</tool_call>", listed.join(",\n"))
}

/// A tool result as the model reads it.
pub fn response_text(content: &str) -> String {
    format!("<tool_response>\n{content}\n</tool_response>")
}

/// A tool result labelled with the call it answers (`file_read {"path": "a"}`) when
/// known, so a model reading several results knows which is which.
pub fn result_text(call: Option<&ToolCall>, content: &str) -> String {
    match call {
        Some(call) => format!(
            "{} {}:\n{}",
            call.name,
            arguments_object(&call.arguments),
            response_text(content)
        ),
        None => response_text(content),
    }
}

/// What follows the results the model answers from: the user's question again.
pub fn answer_reminder(question: &str) -> String {
    format!(
        "Using these results, answer in plain text (or call another tool if one is still \
         needed): {question}"
    )
}

/// A call's arguments as a JSON object (anything else becomes `{}`).
pub fn arguments_object(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// A compact tool as JSON text, `name` first as in training (a JSON object would
/// sort its keys).
fn compact_tool_text(tool: &Value) -> String {
    let field = |name: &str| tool.get(name).cloned().unwrap_or(Value::Null);
    format!(
        "{{\"name\": {}, \"description\": {}, \"parameters\": {}}}",
        field("name"),
        field("description"),
        field("parameters")
    )
}

/// A tool as the compact list shows it: its name, the first sentence of its
/// description, and its parameters with only their types, short descriptions,
/// allowed values and which are required.
pub fn compact_tool(tool: &ToolSchema) -> Value {
    let mut properties = Map::new();
    if let Some(props) = tool.parameters.get("properties").and_then(Value::as_object) {
        for (name, schema) in props {
            properties.insert(name.clone(), compact_property(schema));
        }
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), json!("object"));
    parameters.insert("properties".into(), Value::Object(properties));
    if let Some(required) = tool.parameters.get("required").filter(|r| r.is_array()) {
        parameters.insert("required".into(), required.clone());
    }
    json!({
        "name": tool.name,
        "description": short(&tool.description),
        "parameters": Value::Object(parameters),
    })
}

fn compact_property(schema: &Value) -> Value {
    let mut out = Map::new();
    for key in ["type", "enum"] {
        if let Some(value) = schema.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(items) = schema.get("items").and_then(|i| i.get("type")) {
        out.insert("items".into(), json!({"type": items}));
    }
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        out.insert("description".into(), json!(short(description)));
    }
    Value::Object(out)
}

/// The first sentence of `text`, at most [`DESCRIPTION_CHARS`] characters.
fn short(text: &str) -> String {
    let text = text.trim();
    let sentence = text
        .char_indices()
        .find(|&(i, c)| {
            c == '\n'
                || (c == '.'
                    && text
                        .get(i + 1..)
                        .is_none_or(|rest| rest.is_empty() || rest.starts_with([' ', '\n'])))
        })
        .map_or(text, |(i, c)| text.get(..i + c.len_utf8()).unwrap_or(text))
        .trim_end_matches('\n');
    if sentence.chars().count() <= DESCRIPTION_CHARS {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(DESCRIPTION_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::CallId;

    fn read_tool() -> ToolSchema {
        ToolSchema::new(
            "file_read",
            "Read a text file of the workspace. Large files are cut at the output limit; \
             use offset to page.",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace root."},
                    "offset": {"type": "integer", "minimum": 0},
                    "mode": {"enum": ["text", "bytes"]},
                    "globs": {"type": "array", "items": {"type": "string", "minLength": 1}}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        )
    }

    #[test]
    fn the_compact_tool_keeps_what_a_call_needs_and_drops_annotations() {
        let tool = compact_tool(&read_tool());
        assert_eq!(
            tool,
            json!({
                "name": "file_read",
                "description": "Read a text file of the workspace.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Path relative to the workspace root."},
                        "offset": {"type": "integer"},
                        "mode": {"enum": ["text", "bytes"]},
                        "globs": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["path"]
                }
            })
        );
        let full = serde_json::to_string(&read_tool().parameters).unwrap();
        assert!(tool.to_string().len() < full.len() + 60);
    }

    #[test]
    fn descriptions_are_cut_to_a_sentence_and_a_length() {
        assert_eq!(short("One. Two."), "One.");
        assert_eq!(short("Version 1.2 is fine. More."), "Version 1.2 is fine.");
        assert_eq!(short("no stop"), "no stop");
        assert_eq!(short("line one\nline two"), "line one");
        let long = "x".repeat(500);
        assert_eq!(short(&long).chars().count(), DESCRIPTION_CHARS);
        assert!(short(&long).ends_with('…'));
        assert_eq!(short("ééé. b"), "ééé.");
    }

    #[test]
    fn instructions_come_first_then_the_callers_system_text() {
        let text = system_with_tools(Some("Be brief."), &[read_tool()]);
        assert!(text.starts_with("You are an expert in composing functions."));
        assert!(
            text.contains(
                "<tools>[{\"name\": \"file_read\", \"description\": \"Read a text file of the workspace.\", \"parameters\": {"
            ),
            "{text}"
        );
        assert!(text.ends_with("]</tool_call>\n\nBe brief."), "{text}");
        assert!(!system_with_tools(Some("  "), &[read_tool()]).ends_with("\n\n  "));
    }

    #[test]
    fn calls_are_written_name_first_in_one_list() {
        let calls = [
            ToolCall::new(CallId::from("a"), "file_read", r#"{"path":"x"}"#),
            ToolCall::new(CallId::from("b"), "file_list", "not json"),
        ];
        assert_eq!(
            calls_text(&calls),
            "<tool_call>[\n{\"name\": \"file_read\", \"arguments\": {\"path\":\"x\"}},\n\
             {\"name\": \"file_list\", \"arguments\": {}}\n]</tool_call>"
        );
        assert_eq!(response_text("hi"), "<tool_response>\nhi\n</tool_response>");
    }
}
