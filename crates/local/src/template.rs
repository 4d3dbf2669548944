//! Rendering a conversation into a prompt with the model's own chat template
//! (`tokenizer.chat_template` in the GGUF), through `minijinja`.
//!
//! Templates that know tools (they read `tools`) get the tool list and the calls in
//! the conversation as structured data. Templates that do not get the tools as
//! instructions appended to the system message, asking for the `<tool_call>`
//! syntax, and earlier calls and their results written in that syntax. Models
//! whose GGUF carries no template at all are prompted in ChatML
//! ([`FALLBACK_TEMPLATE`]).

use minijinja::{Environment, Error, ErrorKind, Value};
use std::collections::HashMap;

use oxydra_types::{Message, MessageRole, ToolCall, ToolSchema};
use serde_json::{Map, json};

use crate::error::LocalError;
use crate::tool_format::ToolFormat;
use crate::tool_prompt;

mod bounds;

pub use bounds::{OUTPUT_ALLOWANCE, TEMPLATE_FUEL};

/// The prompt format used when the model has no chat template: ChatML, which
/// most small instruction-tuned models understand.
pub const FALLBACK_TEMPLATE: &str = "{%- for message in messages -%}\
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\
{%- endfor -%}\
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

const TEMPLATE_NAME: &str = "chat";

/// A parsed chat template and what the model writes around it.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    format: ToolFormat,
    native_tools: bool,
}

impl ChatTemplate {
    /// Parses `source` (or [`FALLBACK_TEMPLATE`] when `None`); `bos_token` and
    /// `eos_token` are the texts of the model's special tokens.
    pub fn new(
        source: Option<&str>,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Result<Self, LocalError> {
        let source = source.unwrap_or(FALLBACK_TEMPLATE);
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        // A template comes with the model file: bounded like any untrusted program.
        env.set_fuel(Some(TEMPLATE_FUEL));
        env.add_template_owned(TEMPLATE_NAME, source.to_owned())
            .map_err(template_error)?;
        Ok(Self {
            env,
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            format: ToolFormat::detect(source),
            native_tools: source.contains("tools"),
        })
    }

    /// The tool-call syntax the model is asked to use.
    pub fn tool_format(&self) -> ToolFormat {
        if self.native_tools {
            self.format
        } else {
            ToolFormat::Hermes
        }
    }

    /// Whether the template renders tools itself.
    pub fn native_tools(&self) -> bool {
        self.native_tools
    }

    /// The text of the beginning-of-sequence token.
    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    /// Renders `messages` with `tools`, ending with the assistant's turn opener.
    ///
    /// Templates that refuse a system message (some raise an error) are rendered
    /// again with the system text moved to the front of the first user message.
    pub fn render(&self, messages: &[Message], tools: &[ToolSchema]) -> Result<String, LocalError> {
        let mut values = if self.native_tools {
            messages.iter().map(native_message).collect::<Vec<_>>()
        } else {
            fallback_messages(messages, tools)
        };
        match self.render_values(&values, tools) {
            Ok(prompt) => Ok(prompt),
            // A template past its fuel or output cap is not tried again.
            Err(first @ LocalError::TemplateLimit { .. }) => Err(first),
            Err(first) => {
                if !merge_system_into_user(&mut values) {
                    return Err(first);
                }
                self.render_values(&values, tools).map_err(|_| first)
            }
        }
    }

    fn render_values(
        &self,
        messages: &[serde_json::Value],
        tools: &[ToolSchema],
    ) -> Result<String, LocalError> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(template_error)?;
        let (context, input_bytes) = self.context(messages, tools);
        bounds::render(&template, context, bounds::output_cap(input_bytes))
    }

    /// The template's variables for `messages` and `tools`, and the size of that
    /// input in bytes (the output cap grows with it).
    fn context(&self, messages: &[serde_json::Value], tools: &[ToolSchema]) -> (Value, usize) {
        let listed = if self.native_tools && !tools.is_empty() {
            tools.iter().map(tool_value).collect::<Vec<_>>()
        } else {
            Vec::new()
        };
        let input_bytes = messages
            .iter()
            .chain(&listed)
            .map(|value| value.to_string().len())
            .sum::<usize>();
        let tools_value = if listed.is_empty() {
            Value::from(())
        } else {
            Value::from_serialize(listed)
        };
        let context = minijinja::context! {
            messages => Value::from_serialize(messages),
            tools => tools_value,
            add_generation_prompt => true,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        };
        (context, input_bytes)
    }

    /// The fuel one render of `messages` with `tools` spends.
    #[cfg(test)]
    pub(crate) fn fuel_spent(&self, messages: &[Message], tools: &[ToolSchema]) -> Option<u64> {
        let values = if self.native_tools {
            messages.iter().map(native_message).collect::<Vec<_>>()
        } else {
            fallback_messages(messages, tools)
        };
        let template = self.env.get_template(TEMPLATE_NAME).ok()?;
        bounds::fuel_spent(&template, self.context(&values, tools).0)
    }
}

fn template_error(error: Error) -> LocalError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    LocalError::Template { message }
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: today's date, for templates that print it. Knows the
/// directives templates use (`%Y %m %d %B %b %H %M %S %%`).
fn strftime_now(format: String) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_date(secs, &format)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn format_date(secs: u64, format: &str) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let month_name = usize::try_from(month - 1)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .copied()
        .unwrap_or("January");
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('B') => out.push_str(month_name),
            Some('b') => out.push_str(month_name.get(..3).unwrap_or(month_name)),
            Some('H') => out.push_str(&format!("{:02}", rem / 3600)),
            Some('M') => out.push_str(&format!("{:02}", rem / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", rem % 60)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

fn tool_value(tool: &ToolSchema) -> serde_json::Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
    })
}

fn native_message(message: &Message) -> serde_json::Value {
    let mut value = Map::new();
    value.insert("role".into(), json!(message.role.as_str()));
    value.insert("content".into(), json!(message.text()));
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id.as_str(),
                    "type": "function",
                    "function": {"name": call.name, "arguments": tool_prompt::arguments_object(&call.arguments)},
                })
            })
            .collect::<Vec<_>>();
        value.insert("tool_calls".into(), json!(calls));
    }
    if let Some(id) = &message.tool_call_id {
        value.insert("tool_call_id".into(), json!(id.as_str()));
    }
    if let Some(name) = &message.name {
        value.insert("name".into(), json!(name));
    }
    serde_json::Value::Object(value)
}

/// The conversation in plain roles: tools described in the system message, calls
/// and results written out in the `<tool_call>` syntax, and runs of one role
/// merged (many templates insist that user and assistant alternate).
///
/// A tool result is labelled with the call it answers (`file_read {"path": …}:`), and
/// when the conversation ends with results — the turn in which the model answers
/// from them — the user's last question is repeated after them: small models answer
/// what the end of the prompt asks, and without it they echo the results' syntax.
fn fallback_messages(messages: &[Message], tools: &[ToolSchema]) -> Vec<serde_json::Value> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut system_seen = false;
    let calls: HashMap<&str, &ToolCall> = messages
        .iter()
        .flat_map(|message| message.tool_calls.iter())
        .map(|call| (call.id.as_str(), call))
        .collect();
    for message in messages {
        let (role, content) = match message.role {
            MessageRole::System => {
                system_seen = true;
                let content = if tools.is_empty() {
                    message.text().to_owned()
                } else {
                    tool_prompt::system_with_tools(Some(message.text()), tools)
                };
                ("system", content)
            }
            MessageRole::User => ("user", message.text().to_owned()),
            MessageRole::Assistant => {
                let mut content = message.text().to_owned();
                if !message.tool_calls.is_empty() {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&tool_prompt::calls_text(&message.tool_calls));
                }
                ("assistant", content)
            }
            MessageRole::Tool => {
                let call = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| calls.get(id.as_str()).copied());
                ("user", tool_prompt::result_text(call, message.text()))
            }
        };
        match out.last_mut() {
            Some((last_role, last)) if last_role == role => {
                last.push_str("\n\n");
                last.push_str(&content);
            }
            _ => out.push((role.to_owned(), content)),
        }
    }
    let ends_with_results = messages
        .last()
        .is_some_and(|message| message.role == MessageRole::Tool);
    let question = messages
        .iter()
        .rev()
        .find(|message| message.role == MessageRole::User)
        .map(Message::text)
        .filter(|text| !text.trim().is_empty());
    if let (true, Some(question), Some((_, last))) = (ends_with_results, question, out.last_mut()) {
        last.push_str("\n\n");
        last.push_str(&tool_prompt::answer_reminder(question));
    }
    if !system_seen && !tools.is_empty() {
        out.insert(
            0,
            (
                "system".to_owned(),
                tool_prompt::system_with_tools(None, tools),
            ),
        );
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Moves the system message's text to the front of the first user message;
/// `false` when there was no system message to move.
fn merge_system_into_user(values: &mut Vec<serde_json::Value>) -> bool {
    let Some(index) = values
        .iter()
        .position(|v| v.get("role").and_then(|r| r.as_str()) == Some("system"))
    else {
        return false;
    };
    let system = values.remove(index);
    let system_text = system
        .get("content")
        .and_then(|c| c.as_str())
        .unwrap_or_default()
        .to_owned();
    match values
        .iter_mut()
        .find(|v| v.get("role").and_then(|r| r.as_str()) == Some("user"))
    {
        Some(user) => {
            let text = user
                .get("content")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            let merged = format!("{system_text}\n\n{text}");
            if let Some(object) = user.as_object_mut() {
                object.insert("content".into(), json!(merged));
            }
        }
        None => values.insert(0, json!({"role": "user", "content": system_text})),
    }
    true
}

#[cfg(test)]
mod tests;
