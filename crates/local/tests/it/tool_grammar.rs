//! The tool-call grammars read as a grammar parser reads them (`gbnf`): each schema
//! keyword the grammar holds lets in the calls the schema allows and keeps out those
//! it refuses, and what it loosens (a `pattern`) still lets in every valid call.

use oxydra_local::{ToolFormat, one_call_grammar, tool_grammar};
use oxydra_types::ToolSchema;
use serde_json::{Value, json};

use crate::gbnf::Grammar;

const START: &str = "oxydra-calls";

/// The Hermes grammar of one tool `name` with `parameters`.
fn grammar_of(name: &str, parameters: Value) -> Grammar {
    let tool = ToolSchema::new(name, "", parameters);
    Grammar::parse(&tool_grammar(ToolFormat::Hermes, &[tool]).unwrap().gbnf)
}

/// A Hermes call of `name` with `arguments` written as given.
fn call(name: &str, arguments: &str) -> String {
    format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>")
}

fn assert_accepts(grammar: &Grammar, name: &str, good: &[&str], bad: &[&str]) {
    for arguments in good {
        assert!(
            grammar.accepts(START, &call(name, arguments)),
            "refused {arguments}"
        );
    }
    for arguments in bad {
        assert!(
            !grammar.accepts(START, &call(name, arguments)),
            "let in {arguments}"
        );
    }
}

#[test]
fn required_optional_and_closed_properties() {
    let grammar = grammar_of(
        "file_read",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "minimum": 0, "maximum": 1000}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    );
    assert_accepts(
        &grammar,
        "file_read",
        &[
            r#"{"path": "notes/a.md"}"#,
            r#"{"path":"a \"quoted\" \\ name \u00e9"}"#,
            r#"{"path": "a", "limit": 20}"#,
            r#"{"path": "a", "limit": 20, "offset": 0}"#,
            r#"{"path": "a", "offset": 1000}"#,
            "{\n  \"path\": \"a\",\n  \"limit\": 3\n}",
        ],
        &[
            r#"{}"#,
            r#"{"limit": 3}"#,
            r#"{"path": 3}"#,
            r#"{"path": "a", "limit": 0}"#,
            r#"{"path": "a", "limit": -4}"#,
            r#"{"path": "a", "limit": 1.5}"#,
            r#"{"path": "a", "offset": 1001}"#,
            r#"{"path": "a", "other": 1}"#,
            r#"{"path": "a",}"#,
            r#"{"path": "a"} trailing"#,
            "{\"path\": \"a\nb\"}",
        ],
    );
    assert!(!grammar.accepts(START, &call("file_write", r#"{"path": "a"}"#)));
    assert!(!grammar.accepts(
        START,
        r#"{"name": "file_read", "arguments": {"path": "a"}}"#
    ));
}

#[test]
fn optional_properties_in_any_subset() {
    let grammar = grammar_of(
        "t",
        json!({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"type": "number"}}}),
    );
    assert_accepts(
        &grammar,
        "t",
        &[
            "{}",
            r#"{"b": null}"#,
            r#"{"a": true, "c": -1.5e3}"#,
            r#"{"a": false, "b": null, "c": 0}"#,
        ],
        &[r#"{"a": 1}"#, r#"{"a": true, "a": true}"#, r#"{"d": 1}"#],
    );
}

#[test]
fn enums_consts_unions_and_nullable_types() {
    let grammar = grammar_of(
        "t",
        json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow", 3]},
                "kind": {"const": {"v": 1}},
                "who": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "integer"}]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["mode"]
        }),
    );
    assert_accepts(
        &grammar,
        "t",
        &[
            r#"{"mode": "fast"}"#,
            r#"{"mode": 3, "kind": {"v":1}}"#,
            r#"{"mode": "slow", "who": "123e4567-e89b-12d3-a456-426614174000"}"#,
            r#"{"mode": "slow", "note": null, "who": 42}"#,
            r#"{"mode": "slow", "note": "x"}"#,
        ],
        &[
            r#"{"mode": "medium"}"#,
            r#"{"mode": "fast", "kind": {"v":2}}"#,
            r#"{"mode": "fast", "who": "not-a-uuid"}"#,
            r#"{"mode": "fast", "note": 1}"#,
        ],
    );
}

#[test]
fn arrays_strings_and_their_bounds() {
    let grammar = grammar_of(
        "t",
        json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 3}, "minItems": 1, "maxItems": 3},
                "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
                "any": {"type": "array"},
                "day": {"type": "string", "format": "date"},
                "code": {"type": "string", "pattern": "^[A-Z]{3}$"}
            }
        }),
    );
    assert_accepts(
        &grammar,
        "t",
        &[
            r#"{"tags": ["ab"]}"#,
            r#"{"tags": ["ab", "abc", "xy"]}"#,
            r#"{"pair": [1, true]}"#,
            r#"{"any": [1, "x", {"y": [null]}, []]}"#,
            r#"{"day": "2026-12-01"}"#,
            // A pattern is loosened: any string, the tool's check holds the rest.
            r#"{"code": "ABC"}"#,
            r#"{"code": "anything"}"#,
        ],
        &[
            r#"{"tags": []}"#,
            r#"{"tags": ["ab", "ab", "ab", "ab"]}"#,
            r#"{"tags": ["a"]}"#,
            r#"{"tags": ["abcd"]}"#,
            r#"{"pair": [1]}"#,
            r#"{"pair": [true, 1]}"#,
            r#"{"day": "2026-13-01"}"#,
        ],
    );
}

#[test]
fn references_recursion_and_open_objects() {
    let grammar = grammar_of(
        "tree",
        json!({
            "type": "object",
            "properties": {
                "root": {"$ref": "#/$defs/node"},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
                "extra": {"type": "object"}
            },
            "required": ["root"],
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                    "required": ["name"]
                }
            }
        }),
    );
    assert_accepts(
        &grammar,
        "tree",
        &[
            r#"{"root": {"name": "a"}}"#,
            r#"{"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}"#,
            r#"{"root": {"name": "a"}, "labels": {"x": 1, "y": 2}}"#,
            r#"{"root": {"name": "a"}, "extra": {"any": ["thing"]}}"#,
        ],
        &[
            r#"{"root": {"children": []}}"#,
            r#"{"root": {"name": "a", "children": [{"children": []}]}}"#,
            r#"{"root": {"name": "a"}, "labels": {"x": "one"}}"#,
        ],
    );
}

#[test]
fn hostile_keys_and_names_are_written_as_json_strings() {
    let key = "a\"b\\c\u{1}d e";
    let grammar = grammar_of(
        "t",
        json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}),
    );
    let arguments = format!("{{{}: \"v\"}}", Value::String(key.to_owned()));
    assert!(
        grammar.accepts(START, &call("t", &arguments)),
        "{arguments}"
    );
    assert!(!grammar.accepts(START, &call("t", r#"{"a": "v"}"#)));
}

#[test]
fn several_tools_and_the_three_call_syntaxes() {
    let read = ToolSchema::new(
        "read",
        "",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    );
    let list = ToolSchema::new("list", "", json!({"type": "object", "properties": {}}));
    let tools = [read, list];
    let hermes = Grammar::parse(&tool_grammar(ToolFormat::Hermes, &tools).unwrap().gbnf);
    assert!(hermes.accepts(START, &call("read", r#"{"path": "a"}"#)));
    assert!(hermes.accepts(START, &call("list", "{}")));
    assert!(!hermes.accepts(START, &call("list", r#"{"path": "a"}"#)));
    let two = r#"<tool_call>
[{"name": "read", "arguments": {"path": "a"}}, {"name": "list", "arguments": {}}]
</tool_call>"#;
    assert!(hermes.accepts(START, two));
    let one = Grammar::parse(&one_call_grammar(ToolFormat::Hermes, &tools).unwrap().gbnf);
    assert!(!one.accepts(START, two));

    let llama = Grammar::parse(&tool_grammar(ToolFormat::Llama3Json, &tools).unwrap().gbnf);
    assert!(llama.accepts(
        START,
        r#"{"name": "read", "parameters": {"path": "a"}}; {"name": "list", "parameters": {}}"#
    ));
    let mistral = Grammar::parse(&tool_grammar(ToolFormat::Mistral, &tools).unwrap().gbnf);
    assert!(mistral.accepts(
        START,
        r#"[TOOL_CALLS] [{"name": "read", "arguments": {"path": "a"}}]"#
    ));
}

#[test]
fn hostile_schemas_get_small_grammars_that_still_take_valid_calls() {
    let wide: serde_json::Map<String, Value> = (0..5_000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let huge_bounds = json!({"type": "object", "properties": {
        "s": {"type": "string", "minLength": 1_000_000_000u64},
        "a": {"type": "array", "maxItems": 1_000_000_000u64, "minItems": 3},
        "n": {"type": "integer", "minimum": 9_000_000_000_000_000_000u64},
        "bad": {"type": "array", "minItems": 5, "maxItems": 2}
    }});
    let cyclic = json!({"$ref": "#"});
    for parameters in [
        Value::Object(wide),
        huge_bounds,
        cyclic,
        json!({"type": "nonsense"}),
    ] {
        let text = tool_grammar(
            ToolFormat::Hermes,
            &[ToolSchema::new("t", "", parameters.clone())],
        )
        .unwrap()
        .gbnf;
        assert!(
            text.len() < 64 * 1024,
            "{} bytes for {parameters}",
            text.len()
        );
        let grammar = Grammar::parse(&text);
        assert!(grammar.accepts(START, &call("t", "{}")), "{parameters}");
    }
}
