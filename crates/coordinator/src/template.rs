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
//!
//! Values are data. Rendering is one pass over the parsed template, so a value that
//! itself contains `{{other}}` stays that text; strings stay JSON strings whatever
//! they contain. A string the step's tool runs as a shell command (`shell_exec`'s
//! `command`, see [`shell_command_arg`]) is a shell template, and no value ever enters
//! its text: each placeholder becomes a quoted positional parameter (`"$1"`, `"$2"`,
//! … one per parameter name) and the values travel beside the command, in the tool's
//! `args` list, so no shell parses them. A placeholder where `"$1"` would not stand
//! as a plain word (inside quotes, a comment, a here-document …) is refused at load.
//! One shell feature still evaluates a value it is given: bash's (and ksh's)
//! arithmetic (`[[ $1 -gt 1 ]]`, `$(( $1 ))`, `let`), which expands an array
//! subscript inside the value, so `a[$(cmd)]` runs `cmd` however it was passed.
//! Rendering therefore refuses a shell value that holds `[` followed by `$` or a
//! backquote ([`TemplateError::UnsafeShellValue`]).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::TemplateError;
use crate::shell_words::{ShellScan, could_run_in_arithmetic, positional_word};

/// The argument of `tool` that the tool runs as a shell command, if it has one.
pub fn shell_command_arg(tool: &str) -> Option<&'static str> {
    match tool {
        "shell_exec" => Some("command"),
        _ => None,
    }
}

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
    /// A shell command: its parameters already replaced by `"$1"` …, values apart.
    Shell(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// A parsed argument template.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgsTemplate {
    root: Node,
    /// The parameters of the shell command, in positional order (`$1` first).
    positional: Vec<String>,
}

/// The key of `shell_exec`'s positional parameters.
const POSITIONAL_KEY: &str = "args";

impl ArgsTemplate {
    /// Parses `args`, checking every placeholder against `known` parameter names.
    pub fn parse(args: &Value, known: &BTreeSet<String>) -> Result<Self, TemplateError> {
        Self::parse_for(args, known, None)
    }

    /// Parses the `args` of a step calling `tool`: like [`ArgsTemplate::parse`], and
    /// the tool's shell command argument (if any) is a shell template.
    pub fn parse_for_tool(
        args: &Value,
        known: &BTreeSet<String>,
        tool: &str,
    ) -> Result<Self, TemplateError> {
        Self::parse_for(args, known, shell_command_arg(tool))
    }

    fn parse_for(
        args: &Value,
        known: &BTreeSet<String>,
        shell_key: Option<&str>,
    ) -> Result<Self, TemplateError> {
        let mut positional = Vec::new();
        let root = match (args, shell_key) {
            (Value::Object(map), Some(shell_key)) => Node::Object(
                map.iter()
                    .map(|(key, item)| {
                        let node = match item {
                            Value::String(text) if key == shell_key => {
                                parse_shell(text, known, key, &mut positional)?
                            }
                            other => parse_node(other, known, key)?,
                        };
                        Ok((key.clone(), node))
                    })
                    .collect::<Result<Vec<_>, TemplateError>>()?,
            ),
            _ => parse_node(args, known, "")?,
        };
        if !positional.is_empty() && args.get(POSITIONAL_KEY).is_some() {
            return Err(TemplateError::ReservedShellArgs {
                key: POSITIONAL_KEY,
            });
        }
        Ok(Self { root, positional })
    }

    /// The arguments for a run with `parameters`. A shell command's values go in the
    /// `args` list, as its positional parameters. Fails, naming the parameter, when a
    /// shell value could run as code in bash arithmetic.
    pub fn render(&self, parameters: &Map<String, Value>) -> Result<Value, TemplateError> {
        let mut rendered = render_node(&self.root, parameters).unwrap_or(Value::Null);
        if self.positional.is_empty() {
            return Ok(rendered);
        }
        let mut values = Vec::with_capacity(self.positional.len());
        for name in &self.positional {
            let text = value_text(parameters.get(name));
            if could_run_in_arithmetic(&text) {
                return Err(TemplateError::UnsafeShellValue { name: name.clone() });
            }
            values.push(Value::String(text.into_owned()));
        }
        if let Value::Object(map) = &mut rendered {
            map.insert(POSITIONAL_KEY.to_owned(), Value::Array(values));
        }
        Ok(rendered)
    }

    /// The placeholder names the template uses, sorted.
    pub fn placeholders(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        collect(&self.root, &mut names);
        names.extend(self.positional.iter().cloned());
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

/// A shell command template: placeholders only where a quoted word is one word. Each
/// new name is added to `positional`.
fn parse_shell(
    text: &str,
    known: &BTreeSet<String>,
    at: &str,
    positional: &mut Vec<String>,
) -> Result<Node, TemplateError> {
    let pieces = match parse_string(text, known, at)? {
        Node::Whole(name) => vec![Piece::Param(name)],
        Node::Interpolated(pieces) => pieces,
        literal => return Ok(literal),
    };
    let mut scan = ShellScan::default();
    for piece in &pieces {
        match piece {
            Piece::Text(literal) => scan.feed(literal),
            Piece::Param(name) => {
                scan.placeholder()
                    .map_err(|spot| TemplateError::UnsafeShellPlaceholder {
                        name: name.clone(),
                        at: at.to_owned(),
                        spot: spot.describe(),
                    })?;
                if !positional.contains(name) {
                    positional.push(name.clone());
                }
            }
        }
    }
    let command: String = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text,
            Piece::Param(name) => {
                let index = positional.iter().position(|p| *p == name).unwrap_or(0) + 1;
                positional_word(index)
            }
        })
        .collect();
    Ok(Node::Shell(command))
}

/// A parameter's value as text: strings as they are, absent or `null` empty, other
/// values as JSON.
fn value_text(value: Option<&Value>) -> std::borrow::Cow<'_, str> {
    match value {
        Some(Value::String(text)) => text.as_str().into(),
        Some(Value::Null) | None => "".into(),
        Some(other) => other.to_string().into(),
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
                    Piece::Param(name) => text.push_str(&value_text(parameters.get(name))),
                }
            }
            Some(Value::String(text))
        }
        Node::Shell(command) => Some(Value::String(command.clone())),
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
        Node::Shell(_) => {}
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
        let rendered = template
            .render(&params(
                json!({"url": "https://a.example", "depth": 3, "strict": true}),
            ))
            .unwrap();
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
        let rendered = template
            .render(&params(json!({"name": "Ann", "age": 7, "tags": ["x"]})))
            .unwrap();
        assert_eq!(rendered, json!({"command": "echo Ann is 7 [\"x\"]!"}));
    }

    #[test]
    fn absent_optional_parameters_drop_out() {
        let template = ArgsTemplate::parse(
            &json!({"url": "{{url}}", "limit": "{{limit}}", "note": "n={{limit}}", "l": ["{{limit}}"]}),
            &known(&["url", "limit"]),
        )
        .unwrap();
        let rendered = template.render(&params(json!({"url": "u"}))).unwrap();
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
    fn values_are_never_expanded_again_and_stay_json_strings() {
        let template = ArgsTemplate::parse(
            &json!({"a": "{{first}}", "b": "x {{first}} {{second}}"}),
            &known(&["first", "second"]),
        )
        .unwrap();
        let sneaky = "{{second}}\", \"injected\": \"1";
        let rendered = template
            .render(&params(json!({"first": sneaky, "second": "S"})))
            .unwrap();
        assert_eq!(rendered["a"], json!(sneaky));
        assert_eq!(rendered["b"], json!(format!("x {sneaky} S")));
        let wire: Value = serde_json::from_str(&rendered.to_string()).unwrap();
        assert_eq!(wire.as_object().unwrap().len(), 2, "{wire}");
        assert_eq!(wire["a"], json!(sneaky));
    }

    #[test]
    fn shell_commands_take_values_as_positional_parameters() {
        let template = ArgsTemplate::parse_for_tool(
            &json!({"command": "echo {{msg}} n={{n}} {{msg}}", "timeout_secs": "{{n}}"}),
            &known(&["msg", "n"]),
            "shell_exec",
        )
        .unwrap();
        assert_eq!(template.placeholders(), known(&["msg", "n"]));
        let rendered = template
            .render(&params(json!({"msg": "hi; id > x", "n": 3})))
            .unwrap();
        assert_eq!(
            rendered,
            json!({
                "command": "echo \"$1\" n=\"$2\" \"$1\"",
                "timeout_secs": 3,
                "args": ["hi; id > x", "3"]
            })
        );
        // An absent optional value is empty; a value holding a placeholder stays text.
        let rendered = template
            .render(&params(json!({"msg": "it's {{n}}"})))
            .unwrap();
        assert_eq!(rendered["args"], json!(["it's {{n}}", ""]));
        // A whole-string command is one quoted word too, never a command line.
        let whole = ArgsTemplate::parse_for_tool(
            &json!({"command": "{{msg}}"}),
            &known(&["msg"]),
            "shell_exec",
        )
        .unwrap();
        let rendered = whole.render(&params(json!({"msg": "rm -rf ~"}))).unwrap();
        assert_eq!(rendered, json!({"command": "\"$1\"", "args": ["rm -rf ~"]}));
        // Other tools' strings are not shell.
        let other =
            ArgsTemplate::parse_for_tool(&json!({"command": "{{msg}}"}), &known(&["msg"]), "x")
                .unwrap();
        assert_eq!(
            other.render(&params(json!({"msg": "a b"}))).unwrap()["command"],
            "a b"
        );
    }

    #[test]
    fn a_value_that_bash_arithmetic_would_run_is_refused() {
        let template = ArgsTemplate::parse_for_tool(
            &json!({"command": "[[ {{n}} -gt 100 ]]"}),
            &known(&["n"]),
            "shell_exec",
        )
        .unwrap();
        let error = template
            .render(&params(json!({"n": "a[$(touch pwned)]"})))
            .unwrap_err();
        assert_eq!(error, TemplateError::UnsafeShellValue { name: "n".into() });
        assert!(template.render(&params(json!({"n": 150}))).is_ok());
    }

    #[test]
    fn a_shell_step_may_not_set_the_positional_key_itself() {
        let error = ArgsTemplate::parse_for_tool(
            &json!({"command": "echo {{n}}", "args": ["x"]}),
            &known(&["n"]),
            "shell_exec",
        )
        .unwrap_err();
        assert!(
            matches!(error, TemplateError::ReservedShellArgs { .. }),
            "{error:?}"
        );
        // Without placeholders the key is the author's own.
        assert!(
            ArgsTemplate::parse_for_tool(
                &json!({"command": "echo \"$1\"", "args": ["x"]}),
                &known(&[]),
                "shell_exec",
            )
            .is_ok()
        );
    }

    #[test]
    fn shell_placeholders_where_quoting_would_not_hold_are_refused() {
        for command in [
            "echo '{{msg}}'",
            "echo \"{{msg}}\"",
            "echo hi # {{msg}}",
            "cat <<EOF\n{{msg}}\nEOF",
            "echo ${{msg}}",
        ] {
            let error = ArgsTemplate::parse_for_tool(
                &json!({"command": command}),
                &known(&["msg"]),
                "shell_exec",
            )
            .unwrap_err();
            assert!(
                matches!(error, TemplateError::UnsafeShellPlaceholder { ref name, .. } if name == "msg"),
                "{command}: {error:?}"
            );
            assert!(error.to_string().contains("args.command"), "{error}");
        }
    }

    #[test]
    fn strings_without_placeholders_are_literal() {
        let template =
            ArgsTemplate::parse(&json!({"a": "plain } { text", "n": 5}), &known(&[])).unwrap();
        assert_eq!(
            template.render(&Map::new()).unwrap(),
            json!({"a": "plain } { text", "n": 5})
        );
        assert!(template.placeholders().is_empty());
    }
}
