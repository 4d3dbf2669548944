//! Grammars that constrain tool calls: each tool's JSON Schema becomes GBNF
//! (llama.cpp's own json-schema-to-grammar), wrapped in the family's call syntax.
//! The grammar is lazy: it starts at the family's call opener, so the model may
//! still answer in plain text, but once it opens a call the arguments it writes
//! are JSON that matches the schema.

use oxydra_types::ToolSchema;
use serde_json::{Value, json};

use crate::error::LocalError;
use crate::tool_format::ToolFormat;

/// The rule the sampler starts from.
pub const ROOT_RULE: &str = "oxydra-calls";

/// A grammar for a request's output: its tool calls, or a small model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGrammar {
    /// The GBNF text.
    pub gbnf: String,
    /// The text that switches the grammar on (when the grammar is lazy).
    pub trigger: String,
}

/// The grammar of an answer in text, for a small model's turn that may call no tool:
/// it opens with neither a blank nor `<`, and no `<` in it is followed by a letter,
/// `/`, `!`, `?`, `|` or `<`, so it cannot open a tag — `<tool_call>`, `</tool_response>`,
/// `<|im_start|>`. A small model that made calls in the turns before copies their
/// syntax as text otherwise, and the answer holds no answer. A `<` before a digit, a
/// blank or `=` (`x < 3`, `<=`) is still allowed.
pub fn answer_grammar() -> ToolGrammar {
    ToolGrammar {
        gbnf: format!(
            "{ROOT_RULE} ::= oxydra-first oxydra-char*\n\
             oxydra-first ::= [^< \\t\\n\\r]\n\
             oxydra-char ::= [^<] | \"<\" oxydra-after\n\
             oxydra-after ::= [^a-zA-Z/!?|<]\n"
        ),
        trigger: String::new(),
    }
}

/// The JSON Schema of one call of `tool`: its name, and its arguments checked by
/// its parameter schema.
pub fn call_schema(format: ToolFormat, tool: &ToolSchema) -> Value {
    let mut parameters = tool.parameters.clone();
    if let Some(object) = parameters.as_object_mut() {
        // Annotations json-schema-to-grammar has no use for.
        object.remove("$schema");
        object.remove("title");
        if !object.contains_key("type") && !object.contains_key("properties") {
            object.insert("type".into(), json!("object"));
        }
    } else {
        parameters = json!({"type": "object"});
    }
    json!({
        "type": "object",
        "properties": {
            "name": {"const": tool.name},
            format.arguments_key(): parameters,
        },
        "required": ["name", format.arguments_key()],
        "additionalProperties": false,
    })
}

/// [`call_schema`] as JSON text with `name` before the arguments: the converter keeps
/// the order of the properties as written, and a model writes the name first (a JSON
/// object would sort `arguments` before it).
fn call_schema_text(format: ToolFormat, tool: &ToolSchema) -> String {
    let schema = call_schema(format, tool);
    let key = format.arguments_key();
    let property = |name: &str| {
        schema
            .get("properties")
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}))
    };
    format!(
        "{{\"type\": \"object\", \"properties\": {{\"name\": {}, {}: {}}}, \
         \"required\": [\"name\", {}], \"additionalProperties\": false}}",
        property("name"),
        Value::String(key.to_owned()),
        property(key),
        Value::String(key.to_owned()),
    )
}

/// The grammar that lets the model call any of `tools` in `format`: one block of one
/// or more calls (Hermes: one `<tool_call>` holding a call or a list of calls, so a
/// small model cannot repeat the block until its token limit).
pub fn tool_grammar(format: ToolFormat, tools: &[ToolSchema]) -> Result<ToolGrammar, LocalError> {
    grammar(format, tools, false)
}

/// [`tool_grammar`] for a single call: a small model offered a list writes a second
/// call that undoes the first (two `file_write`s to one path, the second with the
/// argument's description as the content) or repeats it.
pub fn one_call_grammar(
    format: ToolFormat,
    tools: &[ToolSchema],
) -> Result<ToolGrammar, LocalError> {
    grammar(format, tools, true)
}

fn grammar(format: ToolFormat, tools: &[ToolSchema], one: bool) -> Result<ToolGrammar, LocalError> {
    if tools.is_empty() {
        return Err(LocalError::Grammar {
            message: "no tools to call".into(),
        });
    }
    let schemas = tools
        .iter()
        .map(|tool| call_schema_text(format, tool))
        .collect::<Vec<_>>();
    let schema = if let [only] = schemas.as_slice() {
        only.clone()
    } else {
        format!("{{\"anyOf\": [{}]}}", schemas.join(", "))
    };
    let call_rules =
        llama_cpp_2::json_schema_to_grammar(&schema).map_err(|error| LocalError::Grammar {
            message: error.to_string(),
        })?;
    // The converted schema's start rule is `root`; the call syntax goes around it.
    let wrapper = match (format, one) {
        (ToolFormat::Hermes, false) => format!(
            "{ROOT_RULE} ::= oxydra-call\n\
             oxydra-call ::= \"<tool_call>\" \"\\n\"? (root | oxydra-list) \"\\n\"? \"</tool_call>\"\n\
             oxydra-list ::= \"[\" \"\\n\"? root (\",\" [ \\n]? root)* \"\\n\"? \"]\"\n"
        ),
        (ToolFormat::Hermes, true) => format!(
            "{ROOT_RULE} ::= oxydra-call\n\
             oxydra-call ::= \"<tool_call>\" \"\\n\"? (root | oxydra-list) \"\\n\"? \"</tool_call>\"\n\
             oxydra-list ::= \"[\" \"\\n\"? root \"\\n\"? \"]\"\n"
        ),
        (ToolFormat::Llama3Json, false) => format!("{ROOT_RULE} ::= root (\"; \" root)*\n"),
        (ToolFormat::Llama3Json, true) => format!("{ROOT_RULE} ::= root\n"),
        (ToolFormat::Mistral, false) => {
            format!("{ROOT_RULE} ::= \"[TOOL_CALLS]\" \" \"? \"[\" root (\", \" root)* \"]\"\n")
        }
        (ToolFormat::Mistral, true) => {
            format!("{ROOT_RULE} ::= \"[TOOL_CALLS]\" \" \"? \"[\" root \"]\"\n")
        }
    };
    Ok(ToolGrammar {
        gbnf: format!("{wrapper}{call_rules}"),
        trigger: format.trigger().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_tool() -> ToolSchema {
        ToolSchema::new(
            "file_read",
            "Read a file",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["path"],
                "additionalProperties": false
            }),
        )
    }

    fn list_tool() -> ToolSchema {
        ToolSchema::new(
            "list_dir",
            "List a directory",
            json!({"type": "object", "properties": {"recursive": {"type": "boolean"}, "mode": {"enum": ["a", "b"]}}}),
        )
    }

    #[test]
    fn call_schema_pins_the_name_and_keeps_the_parameters() {
        let schema = call_schema(ToolFormat::Hermes, &read_tool());
        assert_eq!(schema["properties"]["name"], json!({"const": "file_read"}));
        assert_eq!(
            schema["properties"]["arguments"]["required"],
            json!(["path"])
        );
        assert!(schema["properties"]["arguments"].get("$schema").is_none());
        let llama = call_schema(ToolFormat::Llama3Json, &read_tool());
        assert!(llama["properties"].get("parameters").is_some());
        assert_eq!(llama["required"], json!(["name", "parameters"]));
    }

    #[test]
    fn the_call_schema_text_puts_the_name_first() {
        let text = call_schema_text(ToolFormat::Hermes, &read_tool());
        let name = text.find("\"name\"").unwrap();
        let arguments = text.find("\"arguments\"").unwrap();
        assert!(name < arguments, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value, call_schema(ToolFormat::Hermes, &read_tool()));
        let grammar = tool_grammar(ToolFormat::Hermes, &[read_tool()]).unwrap();
        let root = grammar
            .gbnf
            .lines()
            .find(|line| line.starts_with("root ::="))
            .unwrap();
        assert!(
            root.find("name").unwrap() < root.find("arguments").unwrap(),
            "{root}"
        );
    }

    #[test]
    fn a_non_object_schema_becomes_any_object() {
        let tool = ToolSchema::new("t", "", json!(true));
        let schema = call_schema(ToolFormat::Hermes, &tool);
        assert_eq!(schema["properties"]["arguments"], json!({"type": "object"}));
    }

    #[test]
    fn hermes_grammar_wraps_calls_in_tool_call_tags() {
        let grammar = tool_grammar(ToolFormat::Hermes, &[read_tool(), list_tool()]).unwrap();
        assert_eq!(grammar.trigger, "<tool_call>");
        assert!(
            grammar.gbnf.starts_with("oxydra-calls ::= oxydra-call\n"),
            "{}",
            grammar.gbnf
        );
        assert!(grammar.gbnf.contains("\"<tool_call>\""), "{}", grammar.gbnf);
        assert!(grammar.gbnf.contains("root ::="), "{}", grammar.gbnf);
        // Both names are pinned, as JSON string literals.
        assert!(grammar.gbnf.contains("file_read"), "{}", grammar.gbnf);
        assert!(grammar.gbnf.contains("list_dir"), "{}", grammar.gbnf);
        // The argument keys are spelled out.
        assert!(grammar.gbnf.contains("path"), "{}", grammar.gbnf);
        assert!(grammar.gbnf.contains("recursive"), "{}", grammar.gbnf);
    }

    #[test]
    fn llama3_and_mistral_grammars_use_their_syntax() {
        let llama = tool_grammar(ToolFormat::Llama3Json, &[read_tool()]).unwrap();
        assert_eq!(llama.trigger, "{\"name\"");
        assert!(llama.gbnf.contains("parameters"), "{}", llama.gbnf);
        let mistral = tool_grammar(ToolFormat::Mistral, &[read_tool()]).unwrap();
        assert_eq!(mistral.trigger, "[TOOL_CALLS]");
        assert!(
            mistral
                .gbnf
                .starts_with("oxydra-calls ::= \"[TOOL_CALLS]\""),
            "{}",
            mistral.gbnf
        );
    }

    #[test]
    fn the_answer_grammar_opens_with_text_and_never_a_tag() {
        let grammar = answer_grammar();
        let rules: Vec<&str> = grammar.gbnf.lines().collect();
        assert_eq!(
            rules.first().copied(),
            Some("oxydra-calls ::= oxydra-first oxydra-char*")
        );
        // The first character is neither `<` nor a blank; a later `<` is followed by
        // no tag character.
        assert!(
            rules.contains(&"oxydra-first ::= [^< \\t\\n\\r]"),
            "{rules:?}"
        );
        assert!(
            rules.contains(&"oxydra-after ::= [^a-zA-Z/!?|<]"),
            "{rules:?}"
        );
        assert!(grammar.trigger.is_empty());
    }

    #[test]
    fn the_one_call_grammar_has_no_second_call() {
        let many = tool_grammar(ToolFormat::Hermes, &[read_tool()]).unwrap();
        let one = one_call_grammar(ToolFormat::Hermes, &[read_tool()]).unwrap();
        assert!(many.gbnf.contains("(\",\" [ \\n]? root)*"), "{}", many.gbnf);
        assert!(
            one.gbnf
                .contains("oxydra-list ::= \"[\" \"\\n\"? root \"\\n\"? \"]\"\n"),
            "{}",
            one.gbnf
        );
        assert!(!one.gbnf.contains(")*\"\\n\"? \"]\""), "{}", one.gbnf);
        assert_eq!(one.trigger, many.trigger);
        for format in [ToolFormat::Llama3Json, ToolFormat::Mistral] {
            let one = one_call_grammar(format, &[read_tool()]).unwrap();
            let first = one.gbnf.lines().next().unwrap();
            assert!(!first.contains('*'), "{first}");
        }
        assert!(one_call_grammar(ToolFormat::Hermes, &[]).is_err());
    }

    #[test]
    fn no_tools_is_an_error() {
        assert!(tool_grammar(ToolFormat::Hermes, &[]).is_err());
    }

    #[test]
    fn hostile_schemas_are_errors_or_grammars_never_crashes() {
        let nasty = [
            json!({"type": "object", "properties": {"x": {"$ref": "#/definitions/missing"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "([a-"}}}),
            json!({"type": "object", "properties": {"\u{0}\"\\": {"type": "string"}}}),
            json!({"type": "nonsense"}),
        ];
        for parameters in nasty {
            let tool = ToolSchema::new("t", "", parameters);
            let _ = tool_grammar(ToolFormat::Hermes, &[tool]);
        }
        let deep = (0..200).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"a": inner}}),
        );
        let _ = tool_grammar(ToolFormat::Hermes, &[ToolSchema::new("deep", "", deep)]);
    }
}
