//! `--output jsonl`: each runtime event as one JSON object per line on stdout, exactly
//! as `oxydra::types::RuntimeEvent` serialises (docs/cli.md lists them), with
//! characters that could fool a terminal written as `\uXXXX` escapes.

use std::io::Write;
use std::sync::Mutex;

use oxydra::types::RuntimeEvent;

/// Writes events as JSON lines.
pub struct JsonlRenderer {
    out: Mutex<Box<dyn Write + Send>>,
}

impl JsonlRenderer {
    /// Writes to stdout.
    pub fn stdout() -> Self {
        Self::new(Box::new(std::io::stdout()))
    }

    /// Writes to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }

    /// Writes one event and flushes, so a reader sees it at once.
    pub fn emit(&self, event: &RuntimeEvent) {
        let rounded;
        let event = match event {
            RuntimeEvent::Final { cost, .. } => {
                let mut copy = event.clone();
                if let RuntimeEvent::Final { cost: shown, .. } = &mut copy {
                    *shown = super::round_cost(*cost);
                }
                rounded = copy;
                &rounded
            }
            _ => event,
        };
        // sonic-rs writes serde_json's bytes in about half its instructions
        // (`oxydra::provider::json_body`).
        let Some(line) = oxydra::provider::json_body::to_vec(event) else {
            return;
        };
        let Ok(line) = String::from_utf8(line) else {
            return;
        };
        self.write_line(&line);
    }

    /// Writes one object the CLI adds to the runtime's events (the `attachments`
    /// line), as [`emit`](Self::emit) writes an event.
    pub fn emit_value(&self, value: &serde_json::Value) {
        self.write_line(&value.to_string());
    }

    fn write_line(&self, line: &str) {
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A closed stdout (a pipe whose reader left) must not stop the run.
        let line = crate::terminal_text::escape_json(line);
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::test_support::SharedBuffer;
    use oxydra::types::{SessionId, Usage};

    #[test]
    fn one_object_per_line_with_a_type() {
        let buffer = SharedBuffer::default();
        let renderer = JsonlRenderer::new(Box::new(buffer.clone()));
        renderer.emit(&RuntimeEvent::TextDelta {
            text: "a\nb".into(),
        });
        renderer.emit(&RuntimeEvent::Final {
            session_id: SessionId::from("ses_1"),
            text: "done".into(),
            turns: 1,
            usage: Usage::default(),
            cost: 0.0,
            output: None,
        });
        let text = buffer.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(
            first,
            serde_json::json!({"type":"text_delta","text":"a\nb"})
        );
        let last: RuntimeEvent = serde_json::from_str(lines[1]).unwrap();
        assert!(matches!(last, RuntimeEvent::Final { turns: 1, .. }));
    }

    #[test]
    fn the_cost_is_a_number_rounded_to_a_millionth() {
        let buffer = SharedBuffer::default();
        let renderer = JsonlRenderer::new(Box::new(buffer.clone()));
        renderer.emit(&RuntimeEvent::Final {
            session_id: SessionId::from("ses_1"),
            text: "done".into(),
            turns: 1,
            usage: Usage::default(),
            cost: 0.000_080_999_999_999_999_99,
            output: None,
        });
        let text = buffer.text();
        assert!(
            text.contains("\"cost\":8.1e-5") || text.contains("\"cost\":0.000081"),
            "{text}"
        );
        let value: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(value["cost"].as_f64(), Some(0.000_081));
    }

    /// The lines are serde_json's bytes (then terminal-escaped), whatever the event
    /// holds: quotes, controls, non-ASCII text, numbers, nested output.
    #[test]
    fn every_line_is_what_serde_json_writes() {
        let odd = "q\"uote\\ back\u{0}nul\u{1b}[31m esc \u{7f} del é 漢 🦀 \u{2028}";
        let events = [
            RuntimeEvent::TextDelta { text: odd.into() },
            RuntimeEvent::ReasoningDelta {
                text: "\t\r\n".into(),
            },
            RuntimeEvent::ToolFailed {
                call_id: oxydra::types::CallId::from("call_\u{1}"),
                name: "file_read".into(),
                error: odd.repeat(3),
            },
            RuntimeEvent::Error {
                kind: "provider".into(),
                message: String::new(),
            },
            RuntimeEvent::Final {
                session_id: SessionId::from("ses_1"),
                text: odd.into(),
                turns: usize::MAX,
                usage: Usage::default(),
                cost: 1234.5,
                output: Some(serde_json::json!({"n": [1, -2.5, 1e300, null], "s": odd})),
            },
        ];
        for event in events {
            let buffer = SharedBuffer::default();
            JsonlRenderer::new(Box::new(buffer.clone())).emit(&event);
            let expected =
                crate::terminal_text::escape_json(&serde_json::to_string(&event).unwrap())
                    .into_owned();
            assert_eq!(buffer.text(), format!("{expected}\n"));
        }
    }
}
