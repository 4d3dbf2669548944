//! `--output text`: the answer streams to stdout as it arrives; on stderr, a spinner
//! with the progress message (only when stderr is a terminal), one line per tool with
//! its status and duration, and a closing line with turns, tokens and cost.
//!
//! On a terminal the answer is rendered as Markdown line by line, with a one-row
//! preview of the line being written (see [`super::markdown`]), and the spinner shows
//! until the first visible text. Everything not Oxydra's own (the answer, tool names
//! and arguments, progress messages, log lines) goes through the terminal sanitizer
//! ([`crate::terminal_text`]) on every stream: a pipe or a file ends at a terminal
//! too. `--output jsonl` carries the answer's exact text.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use oxydra::types::{RuntimeEvent, RuntimeProgressKind};

use super::markdown::{MarkdownStream, render};
use super::screen::{Started, State};
use super::summary::summary_line;
use super::tool_line;
use crate::terminal_text::{Layout, escape_json, lines, one_line as escape, sanitize};

/// The renderer drawing on the process's real terminal, if one is: log lines and the
/// Ctrl-C notice go through it so that they clear its spinner first.
static TERMINAL: Mutex<Option<Weak<Mutex<State>>>> = Mutex::new(None);

/// Writes `bytes` (whole lines) on stderr without sharing a line with the spinner or
/// with an answer still streaming on the terminal: the spinner is cleared first and
/// drawn again after.
pub fn write_stderr_lines(bytes: &[u8]) -> std::io::Result<()> {
    let state = lock(&TERMINAL).as_ref().and_then(Weak::upgrade);
    match state {
        Some(state) => {
            let mut state = lock(&state);
            state.clear_spinner();
            if state.out_is_terminal {
                state.end_text_line();
            }
            let bytes = shown_on_stderr(bytes);
            state.err.write_all(&bytes)?;
            state.err.flush()?;
            state.draw_spinner();
            Ok(())
        }
        None => {
            let mut err = std::io::stderr().lock();
            let bytes = shown_on_stderr(bytes);
            err.write_all(&bytes)?;
            err.flush()
        }
    }
}

/// Log lines (and notices) for stderr, terminal or not: sanitized, keeping only the
/// logger's own colours (it writes none when stderr is no terminal).
fn shown_on_stderr(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let text = String::from_utf8_lossy(bytes);
    std::borrow::Cow::Owned(sanitize(&text, Layout::LogLines).into_owned().into_bytes())
}

/// Clears the spinner of the terminal's renderer for good, before the process exits.
pub fn clear_terminal() {
    let state = lock(&TERMINAL).as_ref().and_then(Weak::upgrade);
    if let Some(state) = state {
        let mut state = lock(&state);
        state.clear_spinner();
        state.spinner = None;
    }
}

/// `name` followed by the call's arguments in short, when there are any.
fn tool_label(name: &str, summary: &str) -> String {
    let name = escape(name);
    if summary.is_empty() {
        name.into_owned()
    } else {
        format!("{name} {summary}")
    }
}

/// Renders events for people.
pub struct TextRenderer {
    state: Arc<Mutex<State>>,
    spinner_enabled: bool,
    stop: Arc<AtomicBool>,
    ticker: Mutex<Option<JoinHandle<()>>>,
}

impl TextRenderer {
    /// Renders to the real stdout and stderr; the spinner runs when stderr is a terminal.
    pub fn terminal() -> Self {
        use std::io::IsTerminal;
        let spinner = std::io::stderr().is_terminal();
        let mut renderer = Self::new(
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
            spinner,
        );
        if std::io::stdout().is_terminal() {
            renderer = renderer.render_markdown(MarkdownStream::for_terminal());
            lock(&renderer.state).out_is_terminal = spinner;
        }
        *lock(&TERMINAL) = Some(Arc::downgrade(&renderer.state));
        renderer
    }

    /// Renders to `out` (the answer) and `err` (progress, tools, summary).
    pub fn new(out: Box<dyn Write + Send>, err: Box<dyn Write + Send>, spinner: bool) -> Self {
        let state = Arc::new(Mutex::new(State {
            out,
            err,
            out_is_terminal: false,
            err_is_terminal: spinner,
            held_cr: false,
            spinner: None,
            spinner_since: None,
            drawn: false,
            frame: 0,
            open_line: false,
            streamed: false,
            markdown: None,
            preview: None,
            workspace: None,
            cost_unknown: false,
            started: HashMap::new(),
            models: super::summary::Answered::default(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = spinner.then(|| {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let mut state = lock(&state);
                    if state.spinner.is_some() {
                        state.frame = state.frame.wrapping_add(1);
                        state.draw_spinner();
                    }
                }
            })
        });
        Self {
            state,
            spinner_enabled: spinner,
            stop,
            ticker: Mutex::new(ticker),
        }
    }

    /// Renders the answer's Markdown through `markdown` instead of writing it raw
    /// (for a terminal: the text is sanitized then).
    pub fn render_markdown(self, markdown: MarkdownStream) -> Self {
        lock(&self.state).markdown = Some(markdown);
        self
    }

    /// Reads the files `file_write` replaces beneath `workspace`, to show their diff.
    pub fn set_workspace(&self, workspace: PathBuf) {
        lock(&self.state).workspace = Some(workspace);
    }

    /// Says "cost unknown" in the summary: the model has no known price.
    pub fn set_cost_unknown(&self) {
        lock(&self.state).cost_unknown = true;
    }

    /// Names `model` (the one asked) in the closing line.
    pub fn set_model(&self, model: &str) {
        lock(&self.state).models.asked = Some(model.to_owned());
    }

    /// Starts a new task (in `chat`): no fallback answered it yet.
    pub fn new_task(&self) {
        lock(&self.state).models.reset();
    }

    /// Renders one event.
    pub fn emit(&self, event: &RuntimeEvent) {
        let mut state = lock(&self.state);
        match event {
            RuntimeEvent::Progress(progress) => {
                if matches!(progress.kind, RuntimeProgressKind::ProviderCall) {
                    state.streamed = false;
                    state.models.new_call();
                }
                if self.spinner_enabled {
                    state.clear_spinner();
                    state.end_text_line();
                    state.spinner = Some(escape(&progress.message).into_owned());
                    state.spinner_since = Some(Instant::now());
                    state.draw_spinner();
                }
            }
            RuntimeEvent::TextDelta { text } => {
                state.write_text(text);
                if !text.is_empty() {
                    state.streamed = true;
                }
            }
            // Reasoning stays out of the transcript a person reads; `--output jsonl`
            // carries it.
            RuntimeEvent::ReasoningDelta { .. } => {}
            RuntimeEvent::ToolStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                let diff = tool_line::planned_diff(name, arguments, state.workspace.as_deref())
                    .or_else(|| super::plan_view::under_tool_line(name, arguments));
                let started = Started {
                    at: Instant::now(),
                    summary: tool_line::summary(arguments),
                    diff,
                };
                state.started.insert(call_id.to_string(), started);
            }
            RuntimeEvent::ToolCompleted {
                call_id,
                name,
                duration_ms,
                output,
            } => {
                let started = state.started.remove(call_id.as_str());
                let summary = started.as_ref().map_or("", |started| &started.summary);
                let mut line = format!("  ✓ {} ({duration_ms} ms)", tool_label(name, summary));
                let diff = started.as_ref().and_then(|started| started.diff.as_ref());
                let shown = diff
                    .cloned()
                    .or_else(|| super::tool_output::tail(name, output));
                if let Some(shown) = shown {
                    line.push('\n');
                    line.push_str(shown.trim_end());
                }
                state.status_line(&line);
            }
            RuntimeEvent::ToolFailed {
                call_id,
                name,
                error,
            } => {
                let started = state.started.remove(call_id.as_str());
                let elapsed = started
                    .as_ref()
                    .map_or(0, |started| started.at.elapsed().as_millis());
                let summary = started.as_ref().map_or("", |started| &started.summary);
                let label = tool_label(name, summary);
                let failure = tool_line::failure(error);
                state.status_line(&format!("  ✗ {label} ({elapsed} ms): {failure}"));
            }
            RuntimeEvent::ApprovalRequested { name, .. } => {
                state.status_line(&format!("  … {} waits for approval", escape(name)));
            }
            RuntimeEvent::ApprovalDecided { name, decision, .. } => {
                state.status_line(&format!("  {} {}", escape(name), escape(decision)));
            }
            RuntimeEvent::TurnCompleted { .. } => {}
            RuntimeEvent::Final {
                session_id,
                text,
                turns,
                usage,
                cost,
                output,
            } => {
                state.clear_spinner();
                state.spinner = None;
                if let Some(output) = output {
                    // A structured answer is printed whole, whatever text streamed before.
                    state.end_text_line();
                    // JSON: hidden characters as JSON escapes, the same value.
                    let output = output.to_string();
                    let _ = writeln!(state.out, "{}", escape_json(&output));
                } else if !state.streamed && !text.is_empty() {
                    // A provider that does not stream still has an answer to show.
                    if state.markdown.is_some() {
                        let _ = write!(state.out, "{}", render(text));
                    } else {
                        let _ = write!(state.out, "{}", lines(text));
                        state.open_line = !text.ends_with('\n');
                    }
                }
                state.end_text_line_before_err();
                let cost = (!state.cost_unknown).then_some(*cost);
                let model = state.models.shown();
                let line = summary_line(*turns, usage, cost, model.as_deref(), session_id.as_str());
                let _ = writeln!(state.err, "{line}");
                let _ = state.err.flush();
            }
            RuntimeEvent::ModelFallback(fallback) => {
                state.models.fell_back(&fallback.to);
                // The provider's error, in short: the JSONL event carries all of it.
                let reason: String = fallback.reason.chars().take(160).collect();
                let line = format!(
                    "  ↪ {} failed ({}); its fallback {} answers",
                    escape(&fallback.from),
                    escape(&reason),
                    escape(&fallback.to)
                );
                state.status_line(&line);
            }
            RuntimeEvent::ProviderRetry(retry) => {
                let line = retry_line(retry);
                if self.spinner_enabled {
                    // The spinner says it, its clock counting from the wait's start.
                    state.clear_spinner();
                    state.spinner = Some(line);
                    state.spinner_since = Some(Instant::now());
                    state.draw_spinner();
                } else {
                    state.status_line(&format!("  ↻ {line}"));
                }
            }
            // A sub-agent's run is summed up by its tool call's own lines.
            RuntimeEvent::SubAgent { .. } => {}
            RuntimeEvent::HookDecision {
                hook,
                point,
                decision,
                tool,
                reason,
                ..
            } => {
                let target = tool
                    .as_deref()
                    .map_or_else(String::new, |tool| format!(" {tool}"));
                let reason = reason
                    .as_deref()
                    .map_or_else(String::new, |r| format!(": {r}"));
                let line = format!("hook `{hook}` ({point}) {decision}{target}{reason}");
                state.status_line(&format!("  ⚑ {}", escape(&line)));
            }
            RuntimeEvent::Error { .. } => {
                // main prints the error once, with its exit code.
                state.clear_spinner();
                state.spinner = None;
                state.end_text_line();
            }
            // An event type newer than this renderer (`RuntimeEvent` is
            // `#[non_exhaustive]`): the JSONL output carries it; text shows nothing.
            _ => {}
        }
    }

    /// Hides the spinner until the next progress event (a question is being asked).
    pub fn suspend(&self) {
        let mut state = lock(&self.state);
        state.clear_spinner();
        state.spinner = None;
        state.end_text_line();
    }

    /// Stops the spinner and clears its line.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = lock(&self.ticker).take() {
            let _ = handle.join();
        }
        let mut state = lock(&self.state);
        state.clear_spinner();
        state.spinner = None;
        state.end_text_line();
    }
}

impl Drop for TextRenderer {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `rate limited, retrying in 5 s (2/4)`: the wait in whole seconds (under one, in
/// milliseconds), and which attempt comes next of how many.
fn retry_line(retry: &oxydra::types::ProviderRetry) -> String {
    let wait = if retry.delay_ms >= 1000 {
        format!("{} s", retry.delay_ms.div_ceil(1000))
    } else {
        format!("{} ms", retry.delay_ms)
    };
    format!(
        "{}, retrying in {wait} ({}/{})",
        escape(&retry.reason),
        retry.attempt.saturating_add(1),
        retry.max_attempts
    )
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
