//! Grammars that constrain tool calls: each tool's JSON Schema becomes GBNF
//! (`schema_grammar`, written as llama.cpp's json-schema-to-grammar writes it),
//! wrapped in the family's call syntax.
//! The grammar is lazy: it starts at the family's call opener, so the model may
//! still answer in plain text, but once it opens a call the arguments it writes
//! are JSON that matches the schema.

use oxydra_types::ToolSchema;
use serde_json::{Value, json};

use crate::error::LocalError;
use crate::schema_grammar::SchemaGrammar;
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

/// The parameter schema a call's arguments are held to: the tool's own, with no
/// `type` read as an object, and anything that is not a schema object as any object.
fn arguments_schema(tool: &ToolSchema) -> Value {
    match tool.parameters.as_object() {
        Some(object) => {
            let mut object = object.clone();
            if !object.contains_key("type") && !object.contains_key("properties") {
                object.insert("type".into(), json!("object"));
            }
            Value::Object(object)
        }
        None => json!({"type": "object"}),
    }
}

/// Adds the rule of one call of `tool` to `rules`, named after `name`: an object of
/// the tool's name, then its arguments checked by its parameter schema — in that
/// order, as a model writes a call. `$ref`s in the parameters point into them.
fn call_rule(
    rules: &mut SchemaGrammar,
    format: ToolFormat,
    tool: &ToolSchema,
    name: &str,
) -> String {
    let name_rule = rules.constant_rule(&format!("{name}-name"), &Value::String(tool.name.clone()));
    let arguments_rule = rules.schema_rule(&arguments_schema(tool), &format!("{name}-arguments"));
    rules.fixed_object_rule(
        name,
        &[
            ("name", name_rule),
            (format.arguments_key(), arguments_rule),
        ],
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
    let mut rules = SchemaGrammar::default();
    let calls: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| call_rule(&mut rules, format, tool, &format!("call{index}")))
        .collect();
    rules.set("root", calls.join(" | "));
    let call_rules = rules.gbnf();
    // The start rule of a call is `root`; the call syntax goes around it.
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

    /// The body of rule `name` in `gbnf`.
    fn rule<'a>(gbnf: &'a str, name: &str) -> &'a str {
        let head = format!("{name} ::= ");
        gbnf.lines()
            .find_map(|line| line.strip_prefix(head.as_str()))
            .unwrap_or_else(|| panic!("no rule {name} in\n{gbnf}"))
    }

    #[test]
    fn a_call_pins_the_name_and_writes_it_before_the_arguments() {
        let grammar = tool_grammar(ToolFormat::Hermes, &[read_tool()]).unwrap();
        assert_eq!(rule(&grammar.gbnf, "root"), "call0");
        let call = rule(&grammar.gbnf, "call0");
        let name = call.find("call0-name-kv").unwrap();
        let arguments = call.find("call0-arguments-kv").unwrap();
        assert!(name < arguments, "{call}");
        assert_eq!(rule(&grammar.gbnf, "call0-name"), "\"\\\"file_read\\\"\"");
        assert!(
            rule(&grammar.gbnf, "call0-arguments-kv").starts_with("\"\\\"arguments\\\"\""),
            "{}",
            grammar.gbnf
        );
        let llama = tool_grammar(ToolFormat::Llama3Json, &[read_tool()]).unwrap();
        assert!(
            rule(&llama.gbnf, "call0-parameters-kv").starts_with("\"\\\"parameters\\\"\""),
            "{}",
            llama.gbnf
        );
    }

    #[test]
    fn a_non_object_schema_becomes_any_object() {
        let tool = ToolSchema::new("t", "", json!(true));
        let grammar = tool_grammar(ToolFormat::Hermes, &[tool]).unwrap();
        assert!(
            rule(&grammar.gbnf, "call0-arguments-kv").ends_with(" object"),
            "{}",
            grammar.gbnf
        );
    }

    #[test]
    fn refs_point_into_the_tools_own_parameters() {
        let tool = ToolSchema::new(
            "move",
            "",
            json!({
                "type": "object",
                "properties": {"to": {"$ref": "#/$defs/point"}},
                "required": ["to"],
                "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
            }),
        );
        let grammar = tool_grammar(ToolFormat::Hermes, &[tool]).unwrap();
        assert!(grammar.gbnf.contains("\\\"x\\\""), "{}", grammar.gbnf);
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
    fn hostile_schemas_still_get_a_grammar() {
        let nasty = [
            json!({"type": "object", "properties": {"x": {"$ref": "#/definitions/missing"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "([a-"}}}),
            json!({"type": "object", "properties": {"\u{0}\"\\": {"type": "string"}}}),
            json!({"type": "nonsense"}),
        ];
        for parameters in nasty {
            let tool = ToolSchema::new("t", "", parameters);
            assert!(tool_grammar(ToolFormat::Hermes, &[tool]).is_ok());
        }
        let deep = (0..200).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"a": inner}}),
        );
        let grammar =
            tool_grammar(ToolFormat::Hermes, &[ToolSchema::new("deep", "", deep)]).unwrap();
        assert!(grammar.gbnf.lines().count() < 200, "{}", grammar.gbnf);
    }
}
