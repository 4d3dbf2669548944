//! The prompt of `chat`: where the lines typed come from — rustyline with history on a
//! terminal, one line at a time from a pipe or a file — and what a read gave.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::error::CliError;
use crate::terminal_input::{LineRead, Priority, TerminalInput};
use crate::terminal_text::reset_before_question;

fn history_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("chat_history.txt"))
}

/// What reading the prompt gave.
pub enum Prompted {
    /// A line.
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D or the end of input.
    Eof,
}

/// Where the lines typed at the prompt come from.
pub enum Prompt {
    /// A terminal: rustyline, with history (moved to a blocking thread while it reads).
    Editor {
        editor: Option<Box<DefaultEditor>>,
        history: Option<PathBuf>,
        /// Where a line typed as the last turn ended may wait.
        input: TerminalInput,
    },
    /// A pipe or a file: one line at a time.
    Lines(TerminalInput),
}

fn terminal_error(error: impl std::fmt::Display) -> CliError {
    CliError::Stdio {
        what: "cannot read the terminal",
        source: std::io::Error::other(error.to_string()),
    }
}

impl Prompt {
    /// The prompt of `input`: rustyline on a terminal (its history loaded), else lines.
    pub fn new(input: &TerminalInput) -> Result<Self, CliError> {
        if !input.is_terminal() {
            return Ok(Self::Lines(input.clone()));
        }
        // The prompt and the line being edited go to the terminal, never to stdout,
        // which carries only the answer (or, with --output jsonl, only events).
        let config = rustyline::Config::builder()
            .behavior(rustyline::config::Behavior::PreferTerm)
            .build();
        let mut editor = DefaultEditor::with_config(config).map_err(terminal_error)?;
        let history = history_path();
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        Ok(Self::Editor {
            editor: Some(Box::new(editor)),
            history,
            input: input.clone(),
        })
    }

    /// The next line typed, Ctrl-C or the end of input.
    pub async fn read(&mut self) -> Result<Prompted, CliError> {
        match self {
            Self::Editor { editor, input, .. } => {
                // A line the turn's watcher read but did not get to hand over as
                // the turn ended is the next one (shown now: echo was off then).
                if let Some(line) = input.take_pending_line() {
                    eprintln!("oxydra> {line}");
                    return Ok(Prompted::Line(line));
                }
                let mut taken = editor
                    .take()
                    .ok_or_else(|| terminal_error("the line editor is gone"))?;
                // The prompt is a question too: asked in plain attributes (the
                // editor starts it on a fresh line).
                let _ = reset_before_question(&mut std::io::stderr(), true);
                let (returned, line) = tokio::task::spawn_blocking(move || {
                    let line = taken.readline("oxydra> ");
                    (taken, line)
                })
                .await
                .map_err(terminal_error)?;
                *editor = Some(returned);
                match line {
                    Ok(line) => Ok(Prompted::Line(line)),
                    Err(ReadlineError::Interrupted) => Ok(Prompted::Interrupted),
                    Err(ReadlineError::Eof) => Ok(Prompted::Eof),
                    Err(error) => Err(terminal_error(error)),
                }
            }
            Self::Lines(input) => {
                let input = input.clone();
                let read = tokio::task::spawn_blocking(move || {
                    input.read_line(&|| false, Priority::Foreground)
                })
                .await
                .map_err(terminal_error)?;
                Ok(match read {
                    LineRead::Line(line) => Prompted::Line(line),
                    LineRead::Eof | LineRead::Stopped | LineRead::Yielded => Prompted::Eof,
                })
            }
        }
    }

    /// Adds a line to the history (terminal only).
    pub fn remember(&mut self, line: &str) {
        if let Self::Editor {
            editor: Some(editor),
            ..
        } = self
        {
            let _ = editor.add_history_entry(line);
        }
    }

    /// Saves the history (terminal only).
    pub fn save(&mut self) {
        if let Self::Editor {
            editor: Some(editor),
            history: Some(path),
            ..
        } = self
        {
            // The history holds what was typed: an owner-only directory (rustyline
            // writes the file itself `0600`).
            if let Some(dir) = path.parent() {
                let _ = oxydra::memory::create_database_dir(dir);
            }
            let _ = editor.save_history(path);
        }
    }
}
