//! The bounds a chat template renders under. A template comes with the model file,
//! and a model file can come from anyone: a template that loops (`range` over a
//! huge number, macros that call themselves) must fail, not hold a thread forever.
//!
//! - **Fuel**: every instruction of minijinja's VM costs one unit; a render that
//!   spends [`TEMPLATE_FUEL`] stops with an error naming the limit. The real
//!   templates of the common families spend a few thousand units on a long
//!   conversation with tools (the tests beside this module measure it), so the
//!   limit is far above any honest template.
//! - **Output**: a render that writes more than [`output_cap`] bytes (a few times
//!   its input plus a fixed allowance) stops with an error naming the cap, without
//!   holding the whole output in memory first.
//!
//! The render itself runs on a blocking thread, under the turn's cancellation
//! (see `LocalProvider`): a cancelled turn ends at once, and the abandoned render
//! stops on its own within its fuel.

use std::io;

use minijinja::{ErrorKind, Template};

use crate::error::LocalError;

/// Instructions one render may execute (minijinja's fuel).
pub const TEMPLATE_FUEL: u64 = 5_000_000;

/// The output allowance every render gets on top of its input, in bytes.
pub const OUTPUT_ALLOWANCE: usize = 1 << 20;

/// The most bytes a render may write, given `input_bytes` of messages and tools:
/// a template copies its input with some markup around each message, so four
/// times the input plus [`OUTPUT_ALLOWANCE`] leaves ample room.
pub fn output_cap(input_bytes: usize) -> usize {
    input_bytes
        .saturating_mul(4)
        .saturating_add(OUTPUT_ALLOWANCE)
}

/// Renders `template` with `context`, stopping at `cap` bytes of output or when the
/// environment's fuel runs out; the error names the limit that was hit.
pub fn render(
    template: &Template<'_, '_>,
    context: minijinja::Value,
    cap: usize,
) -> Result<String, LocalError> {
    let mut out = CappedWriter {
        text: Vec::new(),
        cap,
        overflowed: false,
    };
    let rendered = template.render_captured_to(context, &mut out);
    match rendered {
        Ok(_) => String::from_utf8(out.text).map_err(|error| LocalError::Template {
            message: format!("the chat template wrote invalid UTF-8: {error}"),
        }),
        Err(_) if out.overflowed => Err(LocalError::TemplateLimit {
            message: format!(
                "the chat template's output passed its cap of {cap} bytes \
                 (a template that loops or repeats its input?)"
            ),
        }),
        Err(error) if error.kind() == ErrorKind::OutOfFuel => Err(LocalError::TemplateLimit {
            message: format!(
                "the chat template ran out of fuel: it executed {TEMPLATE_FUEL} instructions \
                 (a template that loops?)"
            ),
        }),
        Err(error) => Err(super::template_error(error)),
    }
}

/// An `io::Write` that keeps what it is given until `cap` bytes, then refuses.
struct CappedWriter {
    text: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl io::Write for CappedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.text.len().saturating_add(buf.len()) > self.cap {
            self.overflowed = true;
            return Err(io::Error::other("output cap reached"));
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How much fuel a render of `template` with `context` spends (for tests and
/// benches that check the real templates stay far below [`TEMPLATE_FUEL`]).
#[cfg(test)]
pub fn fuel_spent(template: &Template<'_, '_>, context: minijinja::Value) -> Option<u64> {
    let captured = template.render_captured(context).ok()?;
    captured.state().fuel_levels().map(|(consumed, _)| consumed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::ChatTemplate;
    use oxydra_types::Message;

    fn looping(source: &str) -> String {
        let template = ChatTemplate::new(Some(source), "", "").unwrap();
        template
            .render(&[Message::user("hi")], &[])
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_long_silent_loop_runs_out_of_fuel() {
        let message = looping(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        );
        assert!(message.contains("ran out of fuel"), "{message}");
        assert!(message.contains(&TEMPLATE_FUEL.to_string()), "{message}");
    }

    #[test]
    fn a_loop_that_writes_stops_at_the_output_cap() {
        let message = looping(
            "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}{% endfor %}",
        );
        assert!(message.contains("output passed its cap"), "{message}");
    }

    #[test]
    fn macros_that_recurse_without_end_are_stopped() {
        // Each call makes two more: exponential work at a depth the recursion
        // limit does not reach.
        let message = looping(
            "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        );
        assert!(message.contains("ran out of fuel"), "{message}");
    }

    #[test]
    fn real_templates_spend_a_small_part_of_the_fuel_on_a_long_conversation() {
        use oxydra_types::{CallId, ToolCall, ToolSchema};
        let templates = [
            include_str!("../../tests/templates/smollm2.jinja"),
            include_str!("../../tests/templates/qwen2_5.jinja"),
            include_str!("../../tests/templates/llama3_1.jinja"),
            include_str!("../../tests/templates/mistral_v0_3.jinja"),
            include_str!("../../tests/templates/gemma2.jinja"),
        ];
        let tools: Vec<ToolSchema> = (0..20)
            .map(|i| {
                ToolSchema::new(
                    format!("tool_{i}"),
                    "A tool with a few parameters",
                    serde_json::json!({"type": "object", "properties": {
                        "path": {"type": "string"}, "limit": {"type": "integer"}}}),
                )
            })
            .collect();
        let mut messages = vec![Message::system("You are terse.")];
        for turn in 0..100 {
            let id = CallId::from(format!("c{turn}").as_str());
            messages.push(Message::user(format!("question {turn}")));
            messages.push(Message::assistant_with_tool_calls(
                None,
                vec![ToolCall::new(id.clone(), "tool_1", r#"{"path":"a.txt"}"#)],
            ));
            messages.push(Message::tool_result(id, "tool_1", "some output"));
            messages.push(Message::assistant(format!("answer {turn}")));
        }
        let mut measured = 0;
        for source in templates {
            let template = ChatTemplate::new(Some(source), "<s>", "</s>").unwrap();
            // Some templates refuse this conversation's shape (a system turn, roles
            // that do not alternate); the others are measured.
            if let Some(spent) = template.fuel_spent(&messages, &tools) {
                // 400 messages and 20 tools: about 20,000 units, far below the limit.
                assert!(spent < TEMPLATE_FUEL / 10, "{spent} of {TEMPLATE_FUEL}");
                measured += 1;
            }
        }
        assert!(measured >= 3, "only {measured} templates rendered");
    }

    #[test]
    fn output_caps_grow_with_the_input() {
        assert_eq!(output_cap(0), OUTPUT_ALLOWANCE);
        assert_eq!(output_cap(1000), 4000 + OUTPUT_ALLOWANCE);
        assert_eq!(output_cap(usize::MAX), usize::MAX);
    }
}
