//! `oxydra chat [OPTIONS]`: an interactive session with line editing and history.
//!
//! Commands: `/new` (a fresh session), `/sessions` (stored sessions), `/switch ID`
//! (continue a stored one), `/cancel` (Ctrl-C cancels a running turn), `/help`,
//! `/exit`. Ctrl-C cancels the current turn; a second Ctrl-C exits.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra::memory::Memory;
use oxydra::types::SessionId;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::args::{ChatArgs, OutputFormat};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;
use crate::output::Renderer;

use super::agent::{self, Agent};
use super::sessions::{memory_error, write_sessions};

const HELP: &str = "commands:
  /new          start a new session
  /sessions     list stored sessions
  /switch ID    continue a stored session
  /cancel       (Ctrl-C cancels a running turn; press it twice to quit)
  /help         this text
  /exit         quit (also Ctrl-D)";

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
        ("/cancel", None) => Input::Cancel,
        ("/help", None) => Input::Help,
        ("/exit" | "/quit", None) => Input::Exit,
        _ => Input::Unknown(line),
    }
}

fn history_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("chat_history.txt"))
}

/// Runs `oxydra chat`.
pub async fn run(args: ChatArgs) -> Result<Exit, CliError> {
    let effective = super::run::effective(&args.options)?;
    let renderer = Arc::new(Renderer::for_format(args.options.output));
    let agent = agent::build(&effective, Arc::clone(&renderer)).await?;
    let mut session = match &effective.runtime.session {
        Some(id) => agent::require_session(&agent.memory, id, &effective).await?,
        None => SessionId::generate(),
    };
    let interrupts = Interrupts::install();
    agent.guard_exit(&interrupts);
    let readline_error = |error: ReadlineError| CliError::Stdio {
        what: "cannot read the terminal",
        source: std::io::Error::other(error),
    };
    // The prompt and the line being edited go to the terminal, never to stdout, which
    // carries only the answer (or, with --output jsonl, only events).
    let editor_config = rustyline::Config::builder()
        .behavior(rustyline::config::Behavior::PreferTerm)
        .build();
    let mut editor = DefaultEditor::with_config(editor_config).map_err(readline_error)?;
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    eprintln!(
        "oxydra chat — model {}, session {session}. Type /help for commands.",
        effective.provider.model
    );
    let mut interrupted = false;
    let mut exit = Exit::Done;
    loop {
        let (returned, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline("oxydra> ");
            (editor, line)
        })
        .await
        .map_err(|error| CliError::Stdio {
            what: "cannot read the terminal",
            source: std::io::Error::other(error),
        })?;
        editor = returned;
        let line = match line {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) if !interrupted => {
                interrupted = true;
                eprintln!("(press Ctrl-C again or type /exit to quit)");
                continue;
            }
            Err(ReadlineError::Interrupted) => {
                exit = Exit::Cancelled;
                break;
            }
            Err(ReadlineError::Eof) => break,
            Err(error) => return Err(readline_error(error)),
        };
        interrupted = false;
        let input = parse(&line);
        if input != Input::Empty {
            let _ = editor.add_history_entry(line.trim());
        }
        match input {
            Input::Empty => {}
            Input::Exit => break,
            Input::Help => eprintln!("{HELP}"),
            Input::Cancel => eprintln!("no turn is running (Ctrl-C cancels a running turn)"),
            Input::Unknown(text) => eprintln!("unknown command `{text}` — /help lists them"),
            Input::New => {
                session = SessionId::generate();
                eprintln!("new session {session}");
            }
            Input::Sessions => list_sessions(&agent, &effective.memory.db, &session).await?,
            Input::Switch(id) => {
                match agent::require_session(&agent.memory, id, &effective).await {
                    Ok(found) => {
                        session = found;
                        eprintln!("switched to session {session}");
                    }
                    Err(error) => eprintln!("error: {error}"),
                }
            }
            Input::Message(text) => {
                renderer.reset();
                let cancel = interrupts.begin_turn();
                let result = agent.runtime.run_session(&session, text, &cancel).await;
                interrupts.end_turn();
                renderer.suspend();
                if let Err(error) = result {
                    renderer.ensure_ended(error.kind(), &error.to_string());
                    if args.options.output == OutputFormat::Text {
                        eprintln!("error: {error}");
                    }
                }
            }
        }
    }
    renderer.finish();
    if let Some(path) = &history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(path);
    }
    agent.stop().await;
    Ok(exit)
}

async fn list_sessions(
    agent: &Agent,
    db: &std::path::Path,
    current: &SessionId,
) -> Result<(), CliError> {
    let sessions = agent
        .memory
        .list_sessions()
        .await
        .map_err(|error| memory_error(db, error))?;
    let mut out = Vec::new();
    let _ = write_sessions(&mut out, &sessions, OutputFormat::Text);
    eprint!("{}", String::from_utf8_lossy(&out));
    eprintln!("current: {current}");
    Ok(())
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
        assert_eq!(parse("/switch"), Input::Unknown("/switch"));
        assert_eq!(parse("/cancel"), Input::Cancel);
        assert_eq!(parse("/exit"), Input::Exit);
        assert_eq!(parse("/quit"), Input::Exit);
        assert_eq!(parse("/help"), Input::Help);
        assert_eq!(parse("/frobnicate"), Input::Unknown("/frobnicate"));
    }
}
