//! How a model family writes tool calls: where a call starts, and how calls are
//! read back out of the generated text.

use serde_json::Value;

/// The tool-call syntax of a model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per
    /// call: ChatML models (Qwen, Hermes, SmolLM) and the fallback for templates
    /// that know no tools.
    Hermes,
    /// A bare `{"name": …, "parameters": {…}}` object per call (Llama 3.1+).
    Llama3Json,
    /// `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]` (Mistral).
    Mistral,
}

/// One call read from the model's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as a JSON object string.
    pub arguments: String,
}

impl ToolFormat {
    /// The format a chat template uses, recognised by the markers it writes.
    pub fn detect(template: &str) -> Self {
        if template.contains("[TOOL_CALLS]") {
            Self::Mistral
        } else if template.contains("<|start_header_id|>") && template.contains("parameters") {
            Self::Llama3Json
        } else {
            Self::Hermes
        }
    }

    /// The text that opens a tool call: the grammar takes over from there.
    pub fn trigger(self) -> &'static str {
        match self {
            Self::Hermes => "<tool_call>",
            Self::Llama3Json => "{\"name\"",
            Self::Mistral => "[TOOL_CALLS]",
        }
    }

    /// The key that holds a call's arguments.
    pub fn arguments_key(self) -> &'static str {
        match self {
            Self::Llama3Json => "parameters",
            Self::Hermes | Self::Mistral => "arguments",
        }
    }

    /// The tool that the (malformed) call text `raw` names, when its `"name"` came out
    /// whole: the first `"name": "…"` in it.
    pub fn called_name(self, raw: &str) -> Option<String> {
        let after = raw.get(raw.find("\"name\"")? + "\"name\"".len()..)?;
        let after = after.trim_start().strip_prefix(':')?.trim_start();
        let mut values = serde_json::Deserializer::from_str(after).into_iter::<String>();
        values.next()?.ok().filter(|name| !name.is_empty())
    }

    /// Splits generated text into the answer before the first call and the calls.
    /// `None` when the text holds a call opener but the calls do not parse (an
    /// answer cut short); text without an opener is all answer.
    pub fn parse(self, output: &str) -> Option<(String, Vec<ParsedCall>)> {
        let Some(start) = output.find(self.trigger()) else {
            return Some((output.to_owned(), Vec::new()));
        };
        let text = output
            .get(..start)
            .unwrap_or_default()
            .trim_end()
            .to_owned();
        let rest = output.get(start..).unwrap_or_default();
        let calls = match self {
            Self::Hermes => parse_hermes(rest)?,
            Self::Llama3Json => parse_json_sequence(rest, self.arguments_key())?,
            Self::Mistral => {
                let array = rest.strip_prefix("[TOOL_CALLS]")?.trim();
                let value: Value = serde_json::from_str(array).ok()?;
                let items = value.as_array()?;
                items
                    .iter()
                    .map(|item| call_from_value(item, "arguments"))
                    .collect::<Option<Vec<_>>>()?
            }
        };
        if calls.is_empty() {
            return None;
        }
        Some((text, calls))
    }
}

/// The calls of Hermes blocks. Repairs what a model that stopped early or went on
/// writes: a last block without its `</tool_call>` whose JSON is whole, and text
/// after the last whole block (dropped). A block whose JSON does not parse fails.
fn parse_hermes(mut rest: &str) -> Option<Vec<ParsedCall>> {
    let mut calls = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Some(calls);
        }
        let Some(body) = rest.strip_prefix("<tool_call>") else {
            // What follows the last whole call is not a call: drop it.
            return (!calls.is_empty()).then_some(calls);
        };
        let (json, after) = match body.find("</tool_call>") {
            Some(end) => (body.get(..end)?, body.get(end + "</tool_call>".len()..)?),
            None => (body, ""),
        };
        let value: Value = serde_json::from_str(json.trim()).ok()?;
        // Some models (SmolLM2) were trained to put a list of calls in one block.
        match value.as_array() {
            Some(items) if !items.is_empty() => {
                for item in items {
                    calls.push(call_from_value(item, "arguments")?);
                }
            }
            Some(_) => return None,
            None => calls.push(call_from_value(&value, "arguments")?),
        }
        rest = after;
    }
}

fn parse_json_sequence(mut rest: &str, key: &str) -> Option<Vec<ParsedCall>> {
    let mut calls = Vec::new();
    loop {
        rest = rest.trim_start_matches([';', ' ', '\n', '\t', '\r']);
        if rest.is_empty() {
            return Some(calls);
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        calls.push(call_from_value(&value, key)?);
        rest = rest.get(values.byte_offset()..)?;
    }
}

fn call_from_value(value: &Value, key: &str) -> Option<ParsedCall> {
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = value
        .get(key)
        .or_else(|| value.get("arguments"))
        .cloned()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    if !arguments.is_object() {
        return None;
    }
    Some(ParsedCall {
        name,
        arguments: arguments.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermes_text_then_two_calls() {
        let out = "Let me look.\n<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}\n</tool_call>";
        let (text, calls) = ToolFormat::Hermes.parse(out).unwrap();
        assert_eq!(text, "Let me look.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "file_read");
        assert_eq!(calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(calls[1].name, "list_dir");
    }

    #[test]
    fn hermes_block_may_hold_a_list_of_calls() {
        let out = "<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"y\": true}}]</tool_call>";
        let (_, calls) = ToolFormat::Hermes.parse(out).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"y":true}"#);
        assert!(
            ToolFormat::Hermes
                .parse("<tool_call>[]</tool_call>")
                .is_none()
        );
    }

    #[test]
    fn plain_text_has_no_calls() {
        let (text, calls) = ToolFormat::Hermes.parse("hello").unwrap();
        assert_eq!(text, "hello");
        assert!(calls.is_empty());
    }

    #[test]
    fn cut_or_malformed_calls_do_not_parse() {
        assert!(
            ToolFormat::Hermes
                .parse("<tool_call>\n{\"name\": \"x\", \"argu")
                .is_none()
        );
        assert!(
            ToolFormat::Hermes
                .parse("<tool_call>{\"name\": 3}</tool_call>")
                .is_none()
        );
        assert!(
            ToolFormat::Hermes
                .parse("<tool_call>{\"name\": \"x\", \"arguments\": [1]}</tool_call>")
                .is_none()
        );
        assert!(
            ToolFormat::Mistral
                .parse("[TOOL_CALLS][{\"name\":")
                .is_none()
        );
        assert!(ToolFormat::Llama3Json.parse("{\"name\": \"x\", ").is_none());
        assert!(
            ToolFormat::Hermes
                .parse("<tool_call>{\"name\": \"x\"}</tool_call>\n<tool_call>{\"na")
                .is_none()
        );
    }

    #[test]
    fn a_missing_closer_and_a_tail_are_repaired() {
        let (_, calls) = ToolFormat::Hermes
            .parse("<tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n")
            .unwrap();
        assert_eq!(calls[0].name, "x");
        let (_, calls) = ToolFormat::Hermes
            .parse("<tool_call>{\"name\": \"x\"}</tool_call> I read it.")
            .unwrap();
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn the_name_of_a_cut_call() {
        let name = |raw| ToolFormat::Hermes.called_name(raw);
        assert_eq!(
            name("<tool_call>[{\"name\": \"file_write\", \"arguments\": {\"pa"),
            Some("file_write".into())
        );
        assert_eq!(name("<tool_call>[{\"name\": \"file_wr"), None);
        assert_eq!(name("<tool_call>[{\"na"), None);
    }

    #[test]
    fn llama3_calls_separated_by_semicolons() {
        let out = r#"{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}"#;
        let (text, calls) = ToolFormat::Llama3Json.parse(out).unwrap();
        assert_eq!(text, "");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(calls[1].name, "b");
    }

    #[test]
    fn mistral_array_of_calls() {
        let out = r#"[TOOL_CALLS][{"name": "a", "arguments": {"q": "z"}}, {"name": "b", "arguments": {}}]"#;
        let (_, calls) = ToolFormat::Mistral.parse(out).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, r#"{"q":"z"}"#);
    }

    #[test]
    fn detects_families_by_markers() {
        assert_eq!(
            ToolFormat::detect("{{ '[TOOL_CALLS]' }}"),
            ToolFormat::Mistral
        );
        assert_eq!(
            ToolFormat::detect("<|start_header_id|> parameters"),
            ToolFormat::Llama3Json
        );
        assert_eq!(ToolFormat::detect("<|im_start|>"), ToolFormat::Hermes);
    }
}
