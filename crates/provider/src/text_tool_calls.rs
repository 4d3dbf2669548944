//! Recovering tool calls that a local model wrote as text because the server did not
//! parse them: a Hermes/Qwen `<tool_call>{"name": …, "arguments": …}</tool_call>`
//! block, or a fenced block (```` ```json ````, ```` ```tool_code ````, ```` ```tool_call ````
//! or bare ```` ``` ````) holding `{"name": …, "arguments": …}` or, in `tool_code`, a
//! call `name(key=value, …)`.
//!
//! A block is recovered only when it names one of the request's tools; anything else
//! stays text. The caller recovers only when the response has no real tool calls.

use oxydra_types::{CallId, FinishReason, Message, ToolCall};
use rand::Rng;
use rand::distr::Alphanumeric;
use serde_json::{Map, Value};

use crate::request::ProviderResponse;

/// The openings a recoverable block starts with.
pub(crate) const MARKERS: [&str; 2] = ["<tool_call>", "```"];

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";
const FENCE: &str = "```";

/// A tool call found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextToolCall {
    /// The tool's name (one of the request's tools).
    pub name: String,
    /// The arguments as a JSON object string.
    pub arguments: String,
}

/// The text with its recovered calls taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// What is left of the answer (trimmed), without the recovered blocks.
    pub text: String,
    /// The calls, in the order they were written.
    pub calls: Vec<TextToolCall>,
}

/// The tool calls written as text in `text` whose names are in `tools`, and the text
/// without them; `None` when there are none (the text is then left as it is).
pub(crate) fn recover(text: &str, tools: &[String]) -> Option<Recovered> {
    if tools.is_empty() {
        return None;
    }
    let mut rest = String::with_capacity(text.len());
    let mut calls = Vec::new();
    let mut at = 0;
    while let Some((start, block)) = next_block(text, at) {
        rest.push_str(text.get(at..start).unwrap_or(""));
        match block.call.filter(|call| tools.contains(&call.name)) {
            Some(call) => calls.push(call),
            None => rest.push_str(text.get(start..block.end).unwrap_or("")),
        }
        at = block.end;
    }
    if calls.is_empty() {
        return None;
    }
    rest.push_str(text.get(at..).unwrap_or(""));
    Some(Recovered {
        text: rest.trim().to_owned(),
        calls,
    })
}

/// `response` with the tool calls its text holds recovered: only when it has no real
/// tool calls and a block names one of `tools`. A `Stop` finish becomes `ToolCalls`.
pub(crate) fn recover_in_response(
    mut response: ProviderResponse,
    tools: &[String],
) -> ProviderResponse {
    if !response.message.tool_calls.is_empty() {
        return response;
    }
    let Some(recovered) = response
        .message
        .content
        .as_deref()
        .and_then(|text| recover(text, tools))
    else {
        return response;
    };
    let calls = recovered
        .calls
        .into_iter()
        .map(|call| ToolCall::new(CallId::from(new_call_id()), call.name, call.arguments))
        .collect();
    let text = (!recovered.text.is_empty()).then_some(recovered.text);
    response.message = Message::assistant_with_tool_calls(text, calls);
    if response.finish_reason == FinishReason::Stop {
        response.finish_reason = FinishReason::ToolCalls;
    }
    response
}

/// A fresh call id for a recovered call (`call_` and 24 letters or digits).
pub(crate) fn new_call_id() -> String {
    let suffix: String = rand::rng()
        .sample_iter(Alphanumeric)
        .take(24)
        .map(char::from)
        .collect();
    format!("call_{suffix}")
}

/// Where the first byte of `text` that may open a block sits: a whole marker, or a
/// marker's beginning cut by the end of `text` (so that streaming can hold it back).
pub(crate) fn marker_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    for at in memchr::memchr2_iter(b'<', b'`', bytes) {
        let tail = text.get(at..).unwrap_or("");
        if MARKERS
            .iter()
            .any(|marker| tail.starts_with(marker) || marker.starts_with(tail))
        {
            return Some(at);
        }
    }
    None
}

struct Block {
    /// One past the block's last byte.
    end: usize,
    /// The call it holds, if it holds one.
    call: Option<TextToolCall>,
}

/// The next block at or after `from`: its start and what it holds.
fn next_block(text: &str, from: usize) -> Option<(usize, Block)> {
    let tail = text.get(from..)?;
    let tag = tail.find(TAG_OPEN).map(|at| at + from);
    let fence = tail.find(FENCE).map(|at| at + from);
    let tag_first = match (tag, fence) {
        (Some(tag), Some(fence)) => tag < fence,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => return None,
    };
    match (tag, fence) {
        (Some(tag), _) if tag_first => {
            let body_start = tag + TAG_OPEN.len();
            let body = text.get(body_start..)?;
            // A model stopped by its end-of-turn token may leave the block unclosed.
            let (inner, end) = match body.find(TAG_CLOSE) {
                Some(close) => (body.get(..close)?, body_start + close + TAG_CLOSE.len()),
                None => (body, text.len()),
            };
            Some((
                tag,
                Block {
                    end,
                    call: json_call(inner),
                },
            ))
        }
        (_, Some(fence)) => {
            let body_start = fence + FENCE.len();
            let body = text.get(body_start..)?;
            let Some(close) = body.find(FENCE) else {
                // An unclosed fence is text: nothing after it is a block.
                return Some((
                    fence,
                    Block {
                        end: text.len(),
                        call: None,
                    },
                ));
            };
            let inner = body.get(..close)?;
            let end = body_start + close + FENCE.len();
            let (lang, code) = inner.split_once('\n').unwrap_or(("", inner));
            let call = match lang.trim() {
                "" | "json" | "tool_call" => json_call(code),
                "tool_code" => json_call(code).or_else(|| python_call(code)),
                _ => None,
            };
            Some((fence, Block { end, call }))
        }
        _ => None,
    }
}

/// `{"name": …, "arguments": {…}}` (or `"parameters"`; arguments may be a JSON
/// string holding the object).
fn json_call(code: &str) -> Option<TextToolCall> {
    let Value::Object(mut object) = serde_json::from_str::<Value>(code.trim()).ok()? else {
        return None;
    };
    let Some(Value::String(name)) = object.remove("name") else {
        return None;
    };
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"))
        .unwrap_or_else(|| Value::Object(Map::new()));
    let arguments = match arguments {
        Value::Object(map) => Value::Object(map).to_string(),
        Value::String(raw) => match serde_json::from_str::<Value>(&raw).ok()? {
            Value::Object(map) => Value::Object(map).to_string(),
            _ => return None,
        },
        _ => return None,
    };
    Some(TextToolCall { name, arguments })
}

/// `name(key=value, …)` with JSON-like literal values (Python's `True`, `False` and
/// `None` too, and single-quoted strings without escapes); anything else is not a call.
fn python_call(code: &str) -> Option<TextToolCall> {
    let code = code.trim();
    let open = code.find('(')?;
    let name = code.get(..open)?.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let inner = code.get(open + 1..)?.strip_suffix(')')?;
    let mut arguments = Map::new();
    for part in split_top_level(inner)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) = part.split_once('=')?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        arguments.insert(key.to_owned(), python_literal(value.trim())?);
    }
    Some(TextToolCall {
        name: name.to_owned(),
        arguments: Value::Object(arguments).to_string(),
    })
}

/// `inner` split at the commas outside strings and brackets; `None` when unbalanced.
fn split_top_level(inner: &str) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (at, c) in inner.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                parts.push(inner.get(start..at)?);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 || quote.is_some() {
        return None;
    }
    parts.push(inner.get(start..)?);
    Some(parts)
}

fn python_literal(value: &str) -> Option<Value> {
    match value {
        "True" => return Some(Value::Bool(true)),
        "False" => return Some(Value::Bool(false)),
        "None" => return Some(Value::Null),
        _ => {}
    }
    if let Some(inner) = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .filter(|inner| !inner.contains(['\'', '\\']))
    {
        return Some(Value::String(inner.to_owned()));
    }
    serde_json::from_str(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn call(name: &str, arguments: &str) -> TextToolCall {
        TextToolCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn hermes_tag_is_recovered_and_removed() {
        let text = "I'll read it.\n<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.md\"}}\n</tool_call>";
        let recovered = recover(text, &tools(&["file_read"])).unwrap();
        assert_eq!(recovered.text, "I'll read it.");
        assert_eq!(
            recovered.calls,
            vec![call("file_read", r#"{"path":"a.md"}"#)]
        );
    }

    #[test]
    fn two_tags_and_an_unclosed_last_one() {
        let text = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":\"{\\\"x\\\":1}\"}";
        let recovered = recover(text, &tools(&["a", "b"])).unwrap();
        assert_eq!(recovered.text, "");
        assert_eq!(
            recovered.calls,
            vec![call("a", "{}"), call("b", r#"{"x":1}"#)]
        );
    }

    #[test]
    fn fenced_json_naming_a_tool_is_recovered() {
        let text = "Reading:\n```json\n{\"name\": \"file_read\", \"parameters\": {\"path\": \"x\"}}\n```\nDone.";
        let recovered = recover(text, &tools(&["file_read"])).unwrap();
        assert_eq!(recovered.text, "Reading:\n\nDone.");
        assert_eq!(recovered.calls, vec![call("file_read", r#"{"path":"x"}"#)]);
    }

    #[test]
    fn tool_code_python_call_is_recovered() {
        let text = "```tool_code\nsubtract(x=2, y=5, note='a, b', exact=True)\n```";
        let recovered = recover(text, &tools(&["subtract"])).unwrap();
        assert_eq!(
            recovered.calls,
            vec![call(
                "subtract",
                r#"{"exact":true,"note":"a, b","x":2,"y":5}"#
            )]
        );
        assert_eq!(recovered.text, "");
    }

    #[test]
    fn unknown_names_and_plain_code_stay_text() {
        // gemma's recorded answer: `print` is not one of the request's tools.
        let gemma = "```tool_code\nprint(2 - 5)\n```";
        assert_eq!(recover(gemma, &tools(&["subtract"])), None);
        let example = "Call it like this:\n```json\n{\"name\": \"rm_rf\", \"arguments\": {}}\n```";
        assert_eq!(recover(example, &tools(&["file_read"])), None);
        let rust = "```rust\nfn main() {}\n```";
        assert_eq!(recover(rust, &tools(&["main"])), None);
        assert_eq!(
            recover("<tool_call>not json</tool_call>", &tools(&["a"])),
            None
        );
        assert_eq!(recover("```json\n{\"name\":\"a\"", &tools(&["a"])), None);
        // No tools in the request: nothing is ever recovered.
        assert_eq!(
            recover(
                "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>",
                &[]
            ),
            None
        );
    }

    #[test]
    fn only_the_registered_blocks_are_taken_out() {
        let text = "```json\n{\"name\": \"other\", \"arguments\": {}}\n```\n<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>";
        let recovered = recover(text, &tools(&["a"])).unwrap();
        assert_eq!(
            recovered.text,
            "```json\n{\"name\": \"other\", \"arguments\": {}}\n```"
        );
        assert_eq!(recovered.calls, vec![call("a", "{}")]);
    }

    #[test]
    fn arguments_that_are_not_an_object_are_not_a_call() {
        for text in [
            "<tool_call>{\"name\":\"a\",\"arguments\":[1]}</tool_call>",
            "<tool_call>{\"name\":\"a\",\"arguments\":\"[1]\"}</tool_call>",
            "<tool_call>{\"name\":7,\"arguments\":{}}</tool_call>",
            "```tool_code\na(x=open('f').read())\n```",
            "```tool_code\na(x=1\n```",
            "```tool_code\na(=1)\n```",
        ] {
            assert_eq!(recover(text, &tools(&["a"])), None, "{text}");
        }
    }

    #[test]
    fn marker_start_finds_whole_and_cut_markers() {
        assert_eq!(marker_start("plain text"), None);
        assert_eq!(marker_start("a < b and `x` ok"), None);
        assert_eq!(marker_start("ends in `"), Some(8));
        assert_eq!(marker_start("see <tool_call>{"), Some(4));
        assert_eq!(marker_start("see <tool_"), Some(4));
        assert_eq!(marker_start("code ``"), Some(5));
        assert_eq!(marker_start("code ```json"), Some(5));
    }

    #[test]
    fn call_ids_are_fresh() {
        let (a, b) = (new_call_id(), new_call_id());
        assert!(a.starts_with("call_") && a.len() == 29);
        assert_ne!(a, b);
    }
}
