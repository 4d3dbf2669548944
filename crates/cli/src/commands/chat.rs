//! `oxydra chat [OPTIONS]`: an interactive session with line editing and history.
//!
//! Commands: `/new` (a fresh session), `/sessions` (stored sessions), `/switch ID`
//! (continue a stored one), `/cancel` (stop the running turn), `/help`, `/exit`.
//! Ctrl-C cancels the current turn; a second Ctrl-C exits.
//!
//! On a terminal the prompt is rustyline's, with history. While a turn runs, the
//! terminal does not echo (see [`crate::terminal_echo`]), so nothing typed lands on the
//! spinner line, and the lines typed go to a watcher ([`TerminalInput::watch`]):
//! `/cancel` cancels the turn as Ctrl-C does; any other line is typed ahead: it is
//! queued, and once the turn ends it is shown at the prompt and run, as if typed there
//! (a cancelled turn drops what was queued, as a terminal drops its type-ahead on
//! Ctrl-C). A consent question, while open, echoes and takes the next line as its
//! answer instead. Without a terminal on stdin nothing is read during a turn: the lines
//! are messages and commands, one after another.
//!
//! `@path` in a message attaches that workspace file when it is an image or a PDF
//! (see [`super::chat_attach`]).

use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use oxydra::runtime::RuntimeError;
use oxydra::scrubbing::scrub;
use oxydra::types::SessionId;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;

use super::chat_attach;
use crate::args::{ChatArgs, OutputFormat};
use crate::config::Effective;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;
use crate::output::Renderer;
use crate::terminal_echo::echo_off;
use crate::terminal_input::{LineRead, Priority, TerminalInput};
use crate::terminal_text::{one_line as escape, reset_before_question};

use crate::output::listing::{write_messages, write_sessions};
use crate::setup::agent::{self, Agent};
use crate::setup::database::{listing, memory_error};

const HELP: &str = "commands:
  /new          start a new session
  /sessions     list stored sessions
  /switch ID    continue a stored session (and show its last messages)
  /switch       list stored sessions
  /cancel       stop the running turn (as Ctrl-C does; Ctrl-C twice quits)
  /undo         undo the files of the session's last changing turn (again: redo)
  /undo force   the same, overwriting files changed since
  /diff         what the session's turns changed in the workspace
  /help         this text
  /exit         quit (also Ctrl-D)
  @path         in a message: attach that workspace image or PDF";

/// Shown when a line other than `/cancel` is typed while a turn runs (the line itself
/// is not shown: it would land amid the answer; it is shown at the prompt).
const QUEUED_HINT: &str =
    "(line queued: it runs when this turn ends — /cancel or Ctrl-C stops the turn)";

/// What a line typed at the prompt asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// Nothing.
    Empty,
    /// A message for the agent.
    Message(&'a str),
    /// `/new`.
    New,
    /// `/sessions`.
    Sessions,
    /// `/switch ID`.
    Switch(&'a str),
    /// `/cancel`.
    Cancel,
    /// `/undo` (`/undo force`: overwrite files changed since).
    Undo(bool),
    /// `/diff`.
    Diff,
    /// `/help`.
    Help,
    /// `/exit` or `/quit`.
    Exit,
    /// A command that does not exist (or lacks its argument).
    Unknown(&'a str),
}

/// Parses a line typed at the prompt.
pub fn parse(line: &str) -> Input<'_> {
    let line = line.trim();
    if line.is_empty() {
        return Input::Empty;
    }
    if !line.starts_with('/') {
        return Input::Message(line);
    }
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or(line);
    let argument = words.next();
    match (command, argument) {
        ("/new", None) => Input::New,
        ("/sessions", None) => Input::Sessions,
        ("/switch", Some(id)) => Input::Switch(id),
        ("/switch", None) => Input::Sessions,
        ("/cancel", None) => Input::Cancel,
        ("/undo", None) => Input::Undo(false),
        ("/undo", Some("force")) => Input::Undo(true),
        ("/diff", None) => Input::Diff,
        ("/help", None) => Input::Help,
        ("/exit" | "/quit", None) => Input::Exit,
        _ => Input::Unknown(line),
    }
}

fn history_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("chat_history.txt"))
}

/// What reading the prompt gave.
enum Prompted {
    /// A line.
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D or the end of input.
    Eof,
}

/// Where the lines typed at the prompt come from.
enum Prompt {
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
    fn new(input: &TerminalInput) -> Result<Self, CliError> {
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

    async fn read(&mut self) -> Result<Prompted, CliError> {
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
    fn remember(&mut self, line: &str) {
        if let Self::Editor {
            editor: Some(editor),
            ..
        } = self
        {
            let _ = editor.add_history_entry(line);
        }
    }

    /// Saves the history (terminal only).
    fn save(&mut self) {
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

/// What a chat holds across its lines.
struct Chat {
    agent: Agent,
    effective: Effective,
    renderer: Arc<Renderer>,
    interrupts: Interrupts,
    input: TerminalInput,
    session: SessionId,
    output: OutputFormat,
    /// Lines typed during the last turn, to run next, oldest first.
    queued: VecDeque<String>,
}

/// Runs `oxydra chat`.
pub async fn run(args: ChatArgs) -> Result<Exit, CliError> {
    if args.print_config {
        return super::run::print_config(&args.options);
    }
    let effective = super::run::effective(&args.options)?;
    effective.require_known_price(&args.options)?;
    let renderer = Arc::new(
        Renderer::for_format(args.options.output)
            .with_workspace(effective.workspace.clone())
            .with_cost_unknown(!effective.price_known())
            .with_model(&effective.provider.model),
    );
    let input = TerminalInput::stdin();
    // On a terminal, creating the line editor replaces the SIGINT handler with
    // rustyline's own (which only wakes a pending `readline`) until the editor is
    // dropped. Installed after it, ours chains to it instead of being replaced: so the
    // editor comes first and lives until the very end.
    let mut prompt = Prompt::new(&input)?;
    let interrupts = Interrupts::install();
    let agent = agent::build(
        &effective,
        Arc::clone(&renderer),
        &interrupts,
        input.clone(),
        true,
    )
    .await?;
    let session =
        agent::starting_session(&agent.memory, &effective, args.options.continue_latest).await?;
    eprintln!(
        "oxydra chat — model {}, session {session}. Type /help for commands.",
        effective.provider.model
    );
    let mut chat = Chat {
        agent,
        effective,
        renderer,
        interrupts,
        input,
        session,
        output: args.options.output,
        queued: VecDeque::new(),
    };
    if chat.effective.session.is_some() || args.options.continue_latest {
        chat.say_whose_prompt().await;
    }
    let mut interrupted = false;
    let mut exit = Exit::Done;
    loop {
        let read = match chat.queued.pop_front() {
            Some(line) => {
                // Typed during the last turn without an echo: shown now, at the prompt.
                eprintln!("oxydra> {line}");
                Prompted::Line(line)
            }
            None => prompt.read().await?,
        };
        let line = match read {
            Prompted::Line(line) => line,
            Prompted::Interrupted if !interrupted => {
                interrupted = true;
                eprintln!("(press Ctrl-C again or type /exit to quit)");
                continue;
            }
            Prompted::Interrupted => {
                exit = Exit::Cancelled;
                break;
            }
            Prompted::Eof => break,
        };
        interrupted = false;
        let input = parse(&line);
        if input != Input::Empty {
            prompt.remember(line.trim());
        }
        match input {
            Input::Empty => {}
            Input::Exit => break,
            Input::Help => eprintln!("{HELP}"),
            Input::Cancel => eprintln!("no turn is running"),
            Input::Undo(force) => {
                super::chat_checkpoints::undo(&chat.agent, &chat.session, force).await
            }
            Input::Diff => super::chat_checkpoints::diff(&chat.agent, &chat.session).await,
            Input::Unknown(text) => eprintln!("unknown command `{text}` — /help lists them"),
            Input::New => {
                chat.session = SessionId::generate();
                eprintln!("new session {}", chat.session);
            }
            Input::Sessions => {
                list_sessions(&chat.agent, &chat.effective.memory.db, &chat.session).await?;
            }
            Input::Switch(id) => {
                match agent::require_session(&chat.agent.memory, id, &chat.effective).await {
                    Ok(found) => {
                        chat.session = found;
                        eprintln!("switched to session {}", chat.session);
                        chat.say_whose_prompt().await;
                        show_recent(&chat.agent, &chat.effective.memory.db, &chat.session).await?;
                    }
                    Err(error) => {
                        eprintln!("error: {}", on_stderr(&scrub(&error.to_string()).text))
                    }
                }
            }
            Input::Message(text) => chat.turn(text).await,
        }
    }
    chat.renderer.finish();
    prompt.save();
    chat.agent.stop().await;
    drop(prompt);
    Ok(exit)
}

impl Chat {
    /// Says so when the current session goes on with an agent's system prompt (one
    /// `serve` started; the configuration names no prompt of its own).
    async fn say_whose_prompt(&self) {
        if self.effective.runtime.system_prompt.is_some() {
            return;
        }
        if let Ok(Some(meta)) = self.agent.memory.session_meta(&self.session).await
            && let Some(name) = meta.agent
        {
            eprintln!(
                "(a session of agent `{}`: it goes on with that agent's system prompt)",
                escape(&name)
            );
        }
    }

    /// Runs one turn; Ctrl-C, or `/cancel` typed on the terminal, cancels it. The
    /// lines typed during the turn are queued to run next; a cancelled turn drops
    /// them, and the lines still queued from earlier turns.
    async fn turn(&mut self, text: &str) {
        self.renderer.reset();
        // `@path` attachments are read before anything starts: a file that cannot be
        // attached sends and stores nothing.
        let attached = match chat_attach::attachments(text, &self.effective.workspace) {
            Ok(attached) => attached,
            Err(why) => {
                self.renderer.ensure_ended("config", &why);
                if self.output == OutputFormat::Text {
                    eprintln!("error: {}", on_stderr(&why));
                }
                return;
            }
        };
        self.renderer.attached(&attached);
        let cancel = self.interrupts.begin_turn();
        let typed = Arc::new(Mutex::new(Vec::new()));
        // Off for the turn, back on when it ends, however it ends.
        let echo = self
            .input
            .is_terminal()
            .then(|| echo_off(std::io::stdin().as_fd()))
            .flatten();
        let watch = self.input.is_terminal().then(|| {
            let cancel = cancel.clone();
            let renderer = Arc::clone(&self.renderer);
            let typed = Arc::clone(&typed);
            self.input.watch(move |line| {
                if let Some(line) = typed_during_turn(line, &cancel, &renderer) {
                    lock(&typed).push(line);
                }
            })
        });
        let result = self
            .agent
            .runtime
            .session(&self.session)
            .prompt(text)
            .parts(attached.into_iter().map(|one| one.part))
            .cancel(&cancel)
            .await;
        self.interrupts.end_turn();
        if let Some(watch) = watch {
            watch.finish().await;
        }
        drop(echo);
        let mut typed = std::mem::take(&mut *lock(&typed));
        self.renderer.suspend();
        if let Err(error) = result {
            self.renderer.ensure_ended(error.kind(), &error.to_string());
            if matches!(error, RuntimeError::Cancelled) {
                // The chat goes on: only the turn ended.
                eprintln!("turn cancelled");
            } else if self.output == OutputFormat::Text {
                // The message can quote a provider's answer: scrubbed.
                eprintln!("error: {}", on_stderr(&scrub(&error.to_string()).text));
            }
        }
        // Cancelling drops the type-ahead, as a terminal's Ctrl-C drops its input:
        // what was typed during this turn and what still waited from earlier ones.
        if cancel.is_cancelled() {
            for (count, when) in [
                (typed.len(), "typed during the cancelled turn"),
                (self.queued.len(), "queued before it"),
            ] {
                if count > 0 {
                    let lines = if count == 1 { "line" } else { "lines" };
                    eprintln!("dropped {count} {lines} {when}");
                }
            }
            typed.clear();
            self.queued.clear();
        }
        self.queued.extend(typed);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A line typed on the terminal while a turn runs: `/cancel` cancels the turn, an
/// empty line is nothing, any other line is returned, to be queued.
fn typed_during_turn(
    line: String,
    cancel: &CancellationToken,
    renderer: &Renderer,
) -> Option<String> {
    match parse(&line) {
        Input::Empty => None,
        Input::Cancel => {
            if !cancel.is_cancelled() {
                cancel.cancel();
                renderer.suspend();
                eprintln!("cancelling the turn…");
            }
            None
        }
        _ => {
            renderer.suspend();
            eprintln!("{QUEUED_HINT}");
            Some(line)
        }
    }
}

async fn list_sessions(
    agent: &Agent,
    db: &crate::config::Database,
    current: &SessionId,
) -> Result<(), CliError> {
    let sessions = listing(agent.memory.as_ref(), db, None).await?;
    let mut out = Vec::new();
    let _ = write_sessions(&mut out, &sessions, OutputFormat::Text);
    eprint!("{}", on_stderr(&String::from_utf8_lossy(&out)));
    eprintln!("current: {current}");
    Ok(())
}

/// How many of a session's last messages are shown when switching to it.
const RECENT_MESSAGES: usize = 6;

/// Shows the last messages of `session` (on stderr), so the conversation can go on.
async fn show_recent(
    agent: &Agent,
    db: &crate::config::Database,
    session: &SessionId,
) -> Result<(), CliError> {
    let messages = agent
        .memory
        .messages(session)
        .await
        .map_err(|error| memory_error(db, error))?;
    let start = messages.len().saturating_sub(RECENT_MESSAGES);
    let recent = messages.get(start..).unwrap_or_default();
    if start > 0 {
        eprintln!("… {start} earlier messages");
    }
    let mut out = Vec::new();
    let _ = write_messages(&mut out, recent, OutputFormat::Text);
    eprint!("{}", on_stderr(&String::from_utf8_lossy(&out)));
    Ok(())
}

/// Stored text (or an error quoting a provider) for stderr: through the terminal
/// sanitizer, whether stderr is a terminal or not.
fn on_stderr(text: &str) -> std::borrow::Cow<'_, str> {
    crate::terminal_text::lines(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_commands() {
        assert_eq!(parse("  "), Input::Empty);
        assert_eq!(parse("hello there"), Input::Message("hello there"));
        assert_eq!(parse("/new"), Input::New);
        assert_eq!(parse("/sessions"), Input::Sessions);
        assert_eq!(parse("/switch ses_1"), Input::Switch("ses_1"));
        assert_eq!(parse("/switch"), Input::Sessions);
        assert_eq!(parse("/cancel"), Input::Cancel);
        assert_eq!(parse("/undo"), Input::Undo(false));
        assert_eq!(parse("/undo force"), Input::Undo(true));
        assert_eq!(parse("/diff"), Input::Diff);
        assert_eq!(parse("/exit"), Input::Exit);
        assert_eq!(parse("/quit"), Input::Exit);
        assert_eq!(parse("/help"), Input::Help);
        assert_eq!(parse("/frobnicate"), Input::Unknown("/frobnicate"));
    }
}
