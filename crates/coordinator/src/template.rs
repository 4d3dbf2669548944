//! Argument templates of deterministic steps.
//!
//! A step's `args` may hold `{{name}}` placeholders in its strings. A string that is
//! exactly one placeholder (`"{{depth}}"`) becomes the parameter's value with its JSON
//! type (a number stays a number); a placeholder inside a longer string
//! (`"https://{{host}}/"`) is replaced by the parameter as text (strings as they are,
//! other values as JSON). A parameter that is absent from the run (an optional one)
//! removes the key holding a whole-string placeholder, or becomes `null` in an array,
//! and becomes empty text inside a longer string. Templates are parsed once, at load,
//! where a placeholder naming no parameter of the schema is an error.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::TemplateError;

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Param(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    Whole(String),
    Interpolated(Vec<Piece>),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// A parsed argument template.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgsTemplate {
    root: Node,
}

impl ArgsTemplate {
    /// Parses `args`, checking every placeholder against `known` parameter names.
    pub fn parse(args: &Value, known: &BTreeSet<String>) -> Result<Self, TemplateError> {
        Ok(Self {
            root: parse_node(args, known, "")?,
        })
    }

    /// The arguments for a run with `parameters`.
    pub fn render(&self, parameters: &Map<String, Value>) -> Value {
        render_node(&self.root, parameters).unwrap_or(Value::Null)
    }

    /// The placeholder names the template uses, sorted.
    pub fn placeholders(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        collect(&self.root, &mut names);
        names
    }
}

fn child_at(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

fn parse_node(value: &Value, known: &BTreeSet<String>, at: &str) -> Result<Node, TemplateError> {
    match value {
        Value::String(text) => parse_string(text, known, at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| parse_node(item, known, &format!("{at}[{index}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Node::Array),
        Value::Object(map) => map
            .iter()
            .map(|(key, item)| Ok((key.clone(), parse_node(item, known, &child_at(at, key))?)))
            .collect::<Result<Vec<_>, _>>()
            .map(Node::Object),
        other => Ok(Node::Literal(other.clone())),
    }
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_string(text: &str, known: &BTreeSet<String>, at: &str) -> Result<Node, TemplateError> {
    let malformed = || TemplateError::Malformed {
        text: text.to_owned(),
        at: at.to_owned(),
    };
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let (before, after_open) = rest.split_at(start);
        let after_open = after_open.get(2..).ok_or_else(malformed)?;
        let end = after_open.find("}}").ok_or_else(malformed)?;
        let (raw_name, after_name) = after_open.split_at(end);
        let name = raw_name.trim();
        if !is_name(name) {
            return Err(malformed());
        }
        if !known.contains(name) {
            return Err(TemplateError::UnknownPlaceholder {
                name: name.to_owned(),
                at: at.to_owned(),
            });
        }
        if !before.is_empty() {
            pieces.push(Piece::Text(before.to_owned()));
        }
        pieces.push(Piece::Param(name.to_owned()));
        rest = after_name.get(2..).unwrap_or_default();
    }
    if pieces.is_empty() {
        return Ok(Node::Literal(Value::String(text.to_owned())));
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    match pieces.as_slice() {
        [Piece::Param(name)] => Ok(Node::Whole(name.clone())),
        _ => Ok(Node::Interpolated(pieces)),
    }
}

/// `None` means "leave this value out" (an absent optional parameter).
fn render_node(node: &Node, parameters: &Map<String, Value>) -> Option<Value> {
    match node {
        Node::Literal(value) => Some(value.clone()),
        Node::Whole(name) => parameters.get(name).cloned(),
        Node::Interpolated(pieces) => {
            let mut text = String::new();
            for piece in pieces {
                match piece {
                    Piece::Text(literal) => text.push_str(literal),
                    Piece::Param(name) => match parameters.get(name) {
                        Some(Value::String(value)) => text.push_str(value),
                        Some(Value::Null) | None => {}
                        Some(other) => text.push_str(&other.to_string()),
                    },
                }
            }
            Some(Value::String(text))
        }
        Node::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|item| render_node(item, parameters).unwrap_or(Value::Null))
                .collect(),
        )),
        Node::Object(entries) => Some(Value::Object(
            entries
                .iter()
                .filter_map(|(key, item)| Some((key.clone(), render_node(item, parameters)?)))
                .collect(),
        )),
    }
}

fn collect(node: &Node, names: &mut BTreeSet<String>) {
    match node {
        Node::Literal(_) => {}
        Node::Whole(name) => {
            names.insert(name.clone());
        }
        Node::Interpolated(pieces) => {
            for piece in pieces {
                if let Piece::Param(name) = piece {
                    names.insert(name.clone());
                }
            }
        }
        Node::Array(items) => items.iter().for_each(|item| collect(item, names)),
        Node::Object(entries) => entries.iter().for_each(|(_, item)| collect(item, names)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn whole_placeholders_keep_the_json_type() {
        let template = ArgsTemplate::parse(
            &json!({"url": "{{url}}", "depth": "{{ depth }}", "flags": ["{{strict}}", 1]}),
            &known(&["url", "depth", "strict"]),
        )
        .unwrap();
        let rendered = template.render(&params(
            json!({"url": "https://a.example", "depth": 3, "strict": true}),
        ));
        assert_eq!(
            rendered,
            json!({"url": "https://a.example", "depth": 3, "flags": [true, 1]})
        );
        assert_eq!(template.placeholders(), known(&["depth", "strict", "url"]));
    }

    #[test]
    fn embedded_placeholders_become_text() {
        let template = ArgsTemplate::parse(
            &json!({"command": "echo {{name}} is {{age}} {{tags}}!"}),
            &known(&["name", "age", "tags"]),
        )
        .unwrap();
        let rendered = template.render(&params(json!({"name": "Ann", "age": 7, "tags": ["x"]})));
        assert_eq!(rendered, json!({"command": "echo Ann is 7 [\"x\"]!"}));
    }

    #[test]
    fn absent_optional_parameters_drop_out() {
        let template = ArgsTemplate::parse(
            &json!({"url": "{{url}}", "limit": "{{limit}}", "note": "n={{limit}}", "l": ["{{limit}}"]}),
            &known(&["url", "limit"]),
        )
        .unwrap();
        let rendered = template.render(&params(json!({"url": "u"})));
        assert_eq!(rendered, json!({"url": "u", "note": "n=", "l": [null]}));
    }

    #[test]
    fn unknown_and_malformed_placeholders_are_refused() {
        let error =
            ArgsTemplate::parse(&json!({"a": {"b": "{{nope}}"}}), &known(&["url"])).unwrap_err();
        assert_eq!(
            error,
            TemplateError::UnknownPlaceholder {
                name: "nope".into(),
                at: "a.b".into()
            }
        );
        assert!(error.to_string().contains("{{nope}}"), "{error}");
        for bad in ["{{url", "{{ }}", "{{1x}}", "x {{a b}} y"] {
            let error = ArgsTemplate::parse(&json!({"k": bad}), &known(&["url"])).unwrap_err();
            assert!(
                matches!(error, TemplateError::Malformed { .. }),
                "{bad}: {error:?}"
            );
        }
    }

    #[test]
    fn template_errors_are_std_errors_with_exact_messages() {
        let unknown = ArgsTemplate::parse(&json!({"u": "{{nope}}"}), &known(&[])).unwrap_err();
        let as_std: &dyn std::error::Error = &unknown;
        assert_eq!(
            as_std.to_string(),
            "placeholder `{{nope}}` in args.u names no property of parameters_schema"
        );
        let malformed = ArgsTemplate::parse(&json!({"k": "{{x"}), &known(&["x"])).unwrap_err();
        assert_eq!(
            malformed.to_string(),
            "malformed placeholder in args.k: `{{x` (expected `{{name}}`)"
        );
    }

    #[test]
    fn strings_without_placeholders_are_literal() {
        let template =
            ArgsTemplate::parse(&json!({"a": "plain } { text", "n": 5}), &known(&[])).unwrap();
        assert_eq!(
            template.render(&Map::new()),
            json!({"a": "plain } { text", "n": 5})
        );
        assert!(template.placeholders().is_empty());
    }
}
