//! Rendering runtime events: for people (`text`) or for programs (`jsonl`).

mod jsonl;
pub mod listing;
mod markdown;
pub mod parts;
pub mod plan_view;
mod run_header;
mod screen;
mod summary;
mod text;
mod tool_line;
mod tool_output;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use oxydra::runtime::scrub_event;
use oxydra::scrubbing::Scrubber;
use oxydra::types::RuntimeEvent;

pub use jsonl::JsonlRenderer;
pub use run_header::header_line;
pub use summary::{dollars, summary_line};
pub use text::{TextRenderer, clear_terminal, write_stderr_lines};

use crate::args::OutputFormat;
use crate::config::sandbox::SupportReport;

/// The renderer of one run: receives every event of the runtime (it is the runtime's
/// event sink) and prints it.
pub struct Renderer {
    kind: RendererKind,
    ended: AtomicBool,
    /// The sandbox report that warns from the run's events when a command was refused
    /// ([`Renderer::report_sandbox_support`]).
    sandbox_report: OnceLock<SupportReport>,
    /// What every event is scrubbed with before it is printed: a default scrubber
    /// until the run's own is handed over ([`Renderer::scrub_with`]).
    scrubber: RwLock<Scrubber>,
}

enum RendererKind {
    Text(TextRenderer),
    Jsonl(JsonlRenderer),
}

impl Renderer {
    /// A renderer on the real stdout/stderr.
    pub fn for_format(format: OutputFormat) -> Self {
        Self::of_kind(match format {
            OutputFormat::Text => RendererKind::Text(TextRenderer::terminal()),
            OutputFormat::Jsonl => RendererKind::Jsonl(JsonlRenderer::stdout()),
        })
    }

    /// A renderer that prints nothing (the runs of `oxydra eval`, reported as a
    /// table instead).
    pub fn silent() -> Self {
        Self::of_kind(RendererKind::Jsonl(JsonlRenderer::new(Box::new(
            std::io::sink(),
        ))))
    }

    /// A renderer of `kind`, nothing printed yet, scrubbing with a default scrubber.
    fn of_kind(kind: RendererKind) -> Self {
        Self {
            kind,
            ended: AtomicBool::new(false),
            sandbox_report: OnceLock::new(),
            scrubber: RwLock::new(Scrubber::new()),
        }
    }

    /// Shows the diff of a `file_write` against the file it replaces in `workspace`.
    pub fn with_workspace(self, workspace: std::path::PathBuf) -> Self {
        if let RendererKind::Text(text) = &self.kind {
            text.set_workspace(workspace);
        }
        self
    }

    /// Says "cost unknown" instead of a cost in the closing summary (text output):
    /// the model has no known price, so its cost was not counted.
    pub fn with_cost_unknown(self, unknown: bool) -> Self {
        if let RendererKind::Text(text) = &self.kind
            && unknown
        {
            text.set_cost_unknown();
        }
        self
    }

    /// Names `model` (the one asked) in the closing line (text output); a fallback
    /// model that answered is named from the run's `model_fallback` events.
    pub fn with_model(self, model: &str) -> Self {
        if let RendererKind::Text(text) = &self.kind {
            text.set_model(model);
        }
        self
    }

    /// Hands the run's sandbox report its events from now on: it prints the warning
    /// once a command was refused for want of the sandbox. A second report is
    /// ignored.
    pub fn report_sandbox_support(&self, report: SupportReport) {
        let _ = self.sandbox_report.set(report);
    }

    /// Scrubs the events printed from now on with `scrubber`: the run's own
    /// ([`oxydra::runtime::AgentRuntime::scrubber`]), which also knows the run's
    /// secrets by value and remembers the texts it found clean, so an event the runtime
    /// already scrubbed is not scanned a second time.
    pub fn scrub_with(&self, scrubber: Scrubber) {
        *self
            .scrubber
            .write()
            .unwrap_or_else(PoisonError::into_inner) = scrubber;
    }

    /// Prints one event, scrubbed first: whatever made it (the runtime, a sub-agent,
    /// or the CLI closing a run that could not start), no secret reaches stdout or
    /// stderr.
    pub fn emit(&self, event: &RuntimeEvent) {
        if let Some(report) = self.sandbox_report.get() {
            report.after_event();
        }
        let event = {
            let scrubber = self.scrubber.read().unwrap_or_else(PoisonError::into_inner);
            &scrub_event(&scrubber, event.clone())
        };
        if matches!(
            event,
            RuntimeEvent::Final { .. } | RuntimeEvent::Error { .. }
        ) {
            self.ended.store(true, Ordering::SeqCst);
        }
        match &self.kind {
            RendererKind::Text(text) => text.emit(event),
            RendererKind::Jsonl(jsonl) => jsonl.emit(event),
        }
    }

    /// Says which files were attached to the prompt, before the run's events: a line
    /// per file on stderr (text), or one `attachments` object (jsonl). Nothing when
    /// none were.
    pub fn attached(&self, attached: &[parts::Attached]) {
        if attached.is_empty() {
            return;
        }
        match &self.kind {
            RendererKind::Text(_) => {
                let _ = write_stderr_lines(parts::attachments_text(attached).as_bytes());
            }
            RendererKind::Jsonl(jsonl) => jsonl.emit_value(&parts::attachments_json(attached)),
        }
    }

    /// Whether a `final` or `error` event was printed since the last [`Renderer::reset`].
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Starts a new task (in `chat`).
    pub fn reset(&self) {
        self.ended.store(false, Ordering::SeqCst);
        if let RendererKind::Text(text) = &self.kind {
            text.new_task();
        }
    }

    /// Ends a task that stopped without a closing event: prints the `error` event
    /// (jsonl) so a reader always sees exactly one `final` or `error`.
    pub fn ensure_ended(&self, kind: &str, message: &str) {
        if !self.ended() {
            self.emit(&RuntimeEvent::Error {
                kind: kind.to_owned(),
                message: message.to_owned(),
            });
        }
    }

    /// Stops the spinner (text) before the process prints anything else.
    pub fn finish(&self) {
        if let RendererKind::Text(text) = &self.kind {
            text.finish();
        }
    }

    /// Clears the spinner so a question can be asked on the terminal.
    pub fn suspend(&self) {
        if let RendererKind::Text(text) = &self.kind {
            text.suspend();
        }
    }
}

/// Prints the closing `error` event of a command that could not start (a flag or
/// configuration error) on stdout, for `--output jsonl` readers.
pub fn print_error_event(kind: &str, message: &str) {
    JsonlRenderer::stdout().emit(&RuntimeEvent::Error {
        kind: kind.to_owned(),
        message: message.to_owned(),
    });
}

/// A cost in US dollars rounded to a millionth, as printed: float sums such as
/// `0.00008099999999999999` become `0.000081`.
pub fn round_cost(cost: f64) -> f64 {
    (cost * 1_000_000.0).round() / 1_000_000.0
}

impl oxydra::runtime::EventSink for Renderer {
    fn emit(&self, event: RuntimeEvent) {
        Renderer::emit(self, &event);
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// A cloneable in-memory writer.
    #[derive(Clone, Default)]
    pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

    impl SharedBuffer {
        pub fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl Write for SharedBuffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::SharedBuffer;
    use super::*;

    fn jsonl_renderer() -> (Renderer, SharedBuffer) {
        let buffer = SharedBuffer::default();
        let renderer = Renderer::of_kind(RendererKind::Jsonl(JsonlRenderer::new(Box::new(
            buffer.clone(),
        ))));
        (renderer, buffer)
    }

    fn error(message: &str) -> RuntimeEvent {
        RuntimeEvent::Error {
            kind: "provider".to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn events_are_scrubbed_by_pattern_before_any_run_scrubber_is_handed_over() {
        let (renderer, buffer) = jsonl_renderer();
        renderer.emit(&error("key AKIAIOSFODNN7EXAMPLF leaked"));
        let printed = buffer.text();
        assert!(!printed.contains("AKIAIOSFODNN7EXAMPLF"), "{printed}");
        assert!(printed.contains("REDACTED"), "{printed}");
    }

    #[test]
    fn the_run_scrubber_redacts_its_known_secrets_from_events_the_cli_makes() {
        // A held secret of no known format: only a scrubber that knows it by value
        // finds it.
        let value = "plain-looking-value-4417";
        let (renderer, buffer) = jsonl_renderer();
        renderer.emit(&error(&format!("before {value}")));
        assert!(
            buffer.text().contains(value),
            "the default scrubber cannot know it"
        );
        let run_scrubber = Scrubber::new()
            .with_known_secrets([("DEPLOY_TOKEN", value)])
            .unwrap()
            .with_memo();
        renderer.scrub_with(run_scrubber);
        renderer.emit(&error(&format!("after {value}")));
        let printed = buffer.text();
        let last = printed.lines().last().unwrap();
        assert!(!last.contains(value), "{last}");
        assert!(last.contains("[REDACTED"), "{last}");
    }

    #[test]
    fn a_long_clean_event_prints_unchanged_through_the_memo_scrubber() {
        let (renderer, buffer) = jsonl_renderer();
        renderer.scrub_with(Scrubber::new().with_memo());
        let output = "line of ordinary tool output\n".repeat(40);
        let event = RuntimeEvent::ToolCompleted {
            call_id: oxydra::types::CallId::from("c1"),
            name: "file_read".to_owned(),
            duration_ms: 1,
            output: output.clone(),
        };
        renderer.emit(&event);
        renderer.emit(&event);
        let printed = buffer.text();
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], lines[1]);
        let value: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(value["output"].as_str(), Some(output.as_str()));
    }
}
