//! The two streams `--output text` draws on, and what they show now: the answer's
//! open line (and its Markdown preview) on stdout, the spinner and status lines on
//! stderr. [`super::text`] decides what to draw; this writes it without tearing.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use super::markdown::{MarkdownStream, Update};
use crate::terminal_text::lines;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const CLEAR_LINE: &str = "\r\x1b[2K";

/// What the terminal shows now: the answer's line on stdout, the spinner on stderr.
pub(super) struct State {
    pub(super) out: Box<dyn Write + Send>,
    pub(super) err: Box<dyn Write + Send>,
    /// stdout is the terminal stderr is on: a log line first ends an open answer line.
    pub(super) out_is_terminal: bool,
    /// stderr is a terminal (the spinner runs there).
    pub(super) err_is_terminal: bool,
    /// A `\r` that ended the last piece of plain answer text: shown with what comes
    /// next, so that a `\r\n` split between two pieces is one line end.
    pub(super) held_cr: bool,
    /// The progress message while the spinner shows, `None` while text streams.
    pub(super) spinner: Option<String>,
    /// When the spinner's step began: past a second, the spinner shows how long ago.
    pub(super) spinner_since: Option<Instant>,
    /// Whether the spinner's line is currently drawn on stderr.
    pub(super) drawn: bool,
    pub(super) frame: usize,
    /// stdout holds text not yet ended with a newline.
    pub(super) open_line: bool,
    /// Text arrived since the last provider call.
    pub(super) streamed: bool,
    /// The answer's Markdown is rendered (stdout is a terminal), not written raw.
    pub(super) markdown: Option<MarkdownStream>,
    /// The preview of the line being written is drawn on stdout's current row.
    pub(super) preview: Option<String>,
    /// Where `file_write` reads the file it replaces from, to show a diff.
    pub(super) workspace: Option<PathBuf>,
    /// The model has no known price: the summary says "cost unknown", not `$0`.
    pub(super) cost_unknown: bool,
    pub(super) started: HashMap<String, Started>,
    /// Which models answered, for the closing line.
    pub(super) models: super::summary::Answered,
}

/// A tool call that is running.
pub(super) struct Started {
    pub(super) at: Instant,
    /// Its arguments in short.
    pub(super) summary: String,
    /// What it changes, shown once it succeeded.
    pub(super) diff: Option<String>,
}

impl State {
    pub(super) fn clear_spinner(&mut self) {
        if self.drawn {
            let _ = write!(self.err, "{CLEAR_LINE}");
            let _ = self.err.flush();
            self.drawn = false;
        }
    }

    pub(super) fn draw_spinner(&mut self) {
        if let Some(message) = &self.spinner {
            let frame = FRAMES
                .get(self.frame % FRAMES.len())
                .copied()
                .unwrap_or("-");
            let elapsed = self
                .spinner_since
                .map_or(0, |since| since.elapsed().as_secs());
            let _ = if elapsed >= 1 {
                write!(self.err, "{CLEAR_LINE}{frame} {message} ({elapsed} s)")
            } else {
                write!(self.err, "{CLEAR_LINE}{frame} {message}")
            };
            let _ = self.err.flush();
            self.drawn = true;
        }
    }

    /// Writes answer text: rendered as Markdown line by line on a terminal (the spinner
    /// cleared once there is text to see), through the terminal sanitizer otherwise (a
    /// pipe or a file ends at a terminal too; `--output jsonl` keeps the exact text).
    pub(super) fn write_text(&mut self, text: &str) {
        let Some(markdown) = self.markdown.as_mut() else {
            if !text.trim().is_empty() {
                self.clear_spinner();
                self.spinner = None;
            }
            let mut piece = String::with_capacity(text.len() + 1);
            if std::mem::take(&mut self.held_cr) {
                piece.push('\r');
            }
            piece.push_str(text);
            if piece.ends_with('\r') {
                piece.pop();
                self.held_cr = true;
            }
            let _ = write!(self.out, "{}", lines(&piece));
            let _ = self.out.flush();
            if !piece.is_empty() {
                self.open_line = !piece.ends_with('\n');
            }
            if self.held_cr {
                self.open_line = true;
            }
            return;
        };
        let update = markdown.push(text);
        if update.visible() {
            self.clear_spinner();
            self.spinner = None;
        }
        self.show(&update);
    }

    /// Shows an update of the rendered answer: the preview drawn before is replaced.
    pub(super) fn show(&mut self, update: &Update) {
        let preview = (!update.preview.is_empty()).then(|| update.preview.clone());
        if update.committed.is_empty() && preview == self.preview {
            return;
        }
        self.clear_preview();
        let _ = write!(self.out, "{}", update.committed);
        if let Some(preview) = &preview {
            let _ = write!(self.out, "{preview}");
            self.open_line = true;
        }
        self.preview = preview;
        let _ = self.out.flush();
    }

    /// Clears the preview's row, if one is drawn.
    pub(super) fn clear_preview(&mut self) {
        if self.preview.take().is_some() {
            let _ = write!(self.out, "{CLEAR_LINE}");
            self.open_line = false;
        }
    }

    /// Ends the answer's open line before a line on stderr. With stdout piped and
    /// stderr a terminal, the line feed ending the answer goes through the pipe and
    /// can reach the terminal after the stderr line does (`oxydra run … | cat`): stderr
    /// then starts with a line feed of its own, so its line never joins the answer's.
    pub(super) fn end_text_line_before_err(&mut self) {
        let open = self.open_line || self.held_cr;
        self.end_text_line();
        if open && self.err_is_terminal && !self.out_is_terminal {
            let _ = writeln!(self.err);
        }
    }

    pub(super) fn end_text_line(&mut self) {
        if std::mem::take(&mut self.held_cr) {
            // No line feed followed it: a `\r` on its own, shown escaped.
            let _ = write!(self.out, "{}", lines("\r"));
            self.open_line = true;
        }
        self.clear_preview();
        let rendered = self
            .markdown
            .as_mut()
            .map(MarkdownStream::flush)
            .unwrap_or_default();
        if !rendered.is_empty() {
            let _ = write!(self.out, "{rendered}");
            let _ = self.out.flush();
            self.open_line = false;
        }
        if self.open_line {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
            self.open_line = false;
        }
    }

    /// Writes a whole status line on stderr without tearing the spinner.
    pub(super) fn status_line(&mut self, line: &str) {
        self.clear_spinner();
        self.end_text_line_before_err();
        let _ = writeln!(self.err, "{line}");
        let _ = self.err.flush();
        self.draw_spinner();
    }
}
