//! `oxydra chat [OPTIONS]`: an interactive session with line editing and history.
//!
//! Commands: `/new` (a fresh session), `/sessions` (stored sessions), `/switch ID`
//! (continue a stored one), `/cancel` (stop the running turn), `/undo`, `/diff`,
//! `/status`, `/model NAME`, `/clear`, `/help`, `/exit` (listed by `/help`). Leaving names
//! the command that resumes the session.
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
//! `@path` in a message attaches that workspace file: an image or a PDF as a part, a
//! text file as its contents after the line (see [`super::chat_attach`]).

use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use oxydra::runtime::RuntimeError;
use oxydra::scrubbing::scrub;
use oxydra::types::SessionId;
use tokio_util::sync::CancellationToken;

use super::chat_attach;
use super::chat_prompt::{Prompt, Prompted};
use crate::args::{ChatArgs, OutputFormat};
use crate::config::Effective;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;
use crate::output::Renderer;
use crate::terminal_echo::echo_off;
use crate::terminal_input::TerminalInput;
use crate::terminal_text::one_line as escape;

use super::chat_views::{
    ChatTally, clear_screen, list_sessions, on_stderr, resume_hint, show_recent, status_text,
};
use crate::setup::agent::{self, Agent};

const HELP: &str = "commands:
  /new          start a new session
  /sessions     list stored sessions
  /switch ID    continue a stored session (and show its last messages)
  /switch       list stored sessions
  /cancel       stop the running turn (as Ctrl-C does; Ctrl-C twice quits)
  /undo         undo the files of the session's last changing turn (again: redo)
  /undo force   the same, overwriting files changed since
  /diff         what the session's turns changed in the workspace
  /rewind N     files and conversation back to before turn N (as `sessions rewind`)
  /rewind N force  the same, overwriting files changed since
  /status       provider, model, sandbox, approvals, workspace; what this chat used
  /model NAME   talk to another model of the same provider from the next message
  /clear        clear the screen and start a new session
  /compact      condense all but the last turn into a summary (fewer tokens per turn)
  /help         this text
  /exit         quit (also Ctrl-D)
  @path         in a message: attach that workspace file (image, PDF or text)";

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
    /// `/rewind N` (`/rewind N force`: overwrite files changed since).
    Rewind(u64, bool),
    /// `/status`.
    Status,
    /// `/model NAME` (`None`: say which model).
    Model(Option<&'a str>),
    /// `/clear`.
    Clear,
    /// `/compact`.
    Compact,
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
    if command == "/rewind" {
        let turn = argument.and_then(|turn| turn.parse::<u64>().ok());
        return match (turn, words.next(), words.next()) {
            (Some(turn), None, None) => Input::Rewind(turn, false),
            (Some(turn), Some("force"), None) => Input::Rewind(turn, true),
            _ => Input::Unknown(line),
        };
    }
    match (command, argument) {
        ("/new", None) => Input::New,
        ("/sessions", None) => Input::Sessions,
        ("/switch", Some(id)) => Input::Switch(id),
        ("/switch", None) => Input::Sessions,
        ("/cancel", None) => Input::Cancel,
        ("/undo", None) => Input::Undo(false),
        ("/undo", Some("force")) => Input::Undo(true),
        ("/diff", None) => Input::Diff,
        ("/status", None) => Input::Status,
        ("/model", model) => Input::Model(model),
        ("/clear", None) => Input::Clear,
        ("/compact", None) => Input::Compact,
        ("/help", None) => Input::Help,
        ("/exit" | "/quit", None) => Input::Exit,
        _ => Input::Unknown(line),
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
    /// What this chat's answered turns used (`/status`).
    tally: ChatTally,
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
    if args.options.output == OutputFormat::Text {
        eprintln!("{}", crate::output::header_line("chat", &effective));
    }
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
    eprintln!("session {session} — type /help for commands, /exit to leave.");
    let mut chat = Chat {
        agent,
        effective,
        renderer,
        interrupts,
        input,
        session,
        output: args.options.output,
        queued: VecDeque::new(),
        tally: ChatTally::default(),
    };
    if chat.effective.session.is_some() || args.options.continue_latest {
        chat.say_whose_prompt().await;
        // Where the conversation stands, before going on with it.
        show_recent(&chat.agent, &chat.effective.memory.db, &chat.session).await?;
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
            Input::Rewind(turn, force) => {
                super::chat_checkpoints::rewind(&chat.agent, &chat.session, turn, force).await
            }
            Input::Status => eprintln!(
                "{}",
                status_text(&chat.effective, &chat.session, &chat.tally)
            ),
            Input::Model(None) => eprintln!(
                "model: {} {}",
                chat.effective.provider.kind.as_str(),
                escape(&chat.effective.provider.model)
            ),
            Input::Model(Some(model)) => chat.switch_model(model).await,
            Input::Clear => {
                if chat.input.is_terminal() {
                    clear_screen();
                }
                chat.session = SessionId::generate();
                eprintln!("new session {}", chat.session);
            }
            Input::Compact => chat.compact().await,
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
    if let Some(hint) = resume_hint(&chat.agent, &chat.session).await {
        eprintln!("{hint}");
    }
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

    /// `/model NAME`: the same provider's model `name` from the next message on — the
    /// agent is built again with it (its MCP servers restarted), the session goes on.
    /// The embedded model is chosen at start; a cost budget needs the model's price.
    async fn switch_model(&mut self, name: &str) {
        if self.effective.provider.kind == crate::config::ProviderKind::Local {
            eprintln!("the embedded model is chosen at start: run `oxydra chat --model PATH.gguf`");
            return;
        }
        let mut effective = self.effective.clone();
        effective.provider.model = name.to_owned();
        if let Err(error) = effective.require_known_price(&crate::args::RunOptions::default()) {
            eprintln!("error: {}", on_stderr(&error.to_string()));
            return;
        }
        let built = agent::build(
            &effective,
            Arc::clone(&self.renderer),
            &self.interrupts,
            self.input.clone(),
            true,
        )
        .await;
        match built {
            Ok(agent) => {
                std::mem::replace(&mut self.agent, agent).stop().await;
                self.effective = effective;
                eprintln!(
                    "model: {} {} (from the next message)",
                    self.effective.provider.kind.as_str(),
                    escape(name)
                );
            }
            Err(error) => eprintln!("error: {}", on_stderr(&error.to_string())),
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
        self.renderer.attached(&attached.media);
        if self.output == OutputFormat::Text {
            for (file, text) in &attached.texts {
                eprintln!(
                    "attached {}: text, {} lines",
                    escape(&scrub(file).text),
                    text.lines().count()
                );
            }
        }
        let message = attached.message(text);
        let source = attached.source();
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
        let mut request = self
            .agent
            .runtime
            .session(&self.session)
            .prompt(message)
            .parts(attached.media.into_iter().map(|one| one.part))
            .cancel(&cancel);
        if let Some(source) = source {
            request = request.prompt_source(source);
        }
        let result = request.await;
        self.interrupts.end_turn();
        if let Some(watch) = watch {
            watch.finish().await;
        }
        drop(echo);
        let mut typed = std::mem::take(&mut *lock(&typed));
        self.renderer.suspend();
        if let Ok(outcome) = &result {
            self.tally.turns += outcome.turns;
            self.tally.usage += outcome.usage;
            self.tally.cost += outcome.cost;
        }
        if let Err(error) = result {
            self.renderer.ensure_ended(error.kind(), &error.to_string());
            if matches!(error, RuntimeError::Cancelled) {
                // The chat goes on: only the turn ended.
                eprintln!("turn cancelled");
            } else if self.output == OutputFormat::Text {
                // The message can quote a provider's answer: scrubbed.
                // Worded as `run` words it (`CliError::Run`), but for how to go on.
                let line = CliError::Run {
                    kind: error.kind().to_owned(),
                    message: crate::ended_early::ended_early(
                        &error,
                        crate::ended_early::Place::Chat,
                    ),
                };
                eprintln!("error: {}", on_stderr(&scrub(&line.to_string()).text));
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

impl Chat {
    /// `/compact`: condenses the session now; Ctrl-C stops it as it stops a turn.
    async fn compact(&mut self) {
        let cancel = self.interrupts.begin_turn();
        let result = self.agent.runtime.compact(&self.session, &cancel).await;
        self.interrupts.end_turn();
        match result {
            Ok(compacted) => {
                self.tally.usage += compacted.usage;
                self.tally.cost += compacted.cost;
                eprintln!("{}", super::chat_views::compacted_text(&compacted));
            }
            Err(RuntimeError::Cancelled) => eprintln!("compacting cancelled; nothing changed"),
            Err(error) => eprintln!("error: {}", on_stderr(&scrub(&error.to_string()).text)),
        }
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
        assert_eq!(parse("/rewind 2"), Input::Rewind(2, false));
        assert_eq!(parse("/rewind 3 force"), Input::Rewind(3, true));
        for bad in [
            "/rewind",
            "/rewind x",
            "/rewind -1",
            "/rewind 2 now",
            "/rewind 2 force x",
        ] {
            assert_eq!(parse(bad), Input::Unknown(bad), "{bad}");
        }
        assert_eq!(parse("/diff"), Input::Diff);
        assert_eq!(parse("/exit"), Input::Exit);
        assert_eq!(parse("/quit"), Input::Exit);
        assert_eq!(parse("/help"), Input::Help);
        assert_eq!(parse("/status"), Input::Status);
        assert_eq!(parse("/clear"), Input::Clear);
        assert_eq!(parse("/compact"), Input::Compact);
        assert_eq!(parse("/compact now"), Input::Unknown("/compact now"));
        assert_eq!(parse("/model"), Input::Model(None));
        assert_eq!(parse("/model gpt-4.1"), Input::Model(Some("gpt-4.1")));
        assert_eq!(parse("/status now"), Input::Unknown("/status now"));
        assert_eq!(parse("/frobnicate"), Input::Unknown("/frobnicate"));
    }
}
