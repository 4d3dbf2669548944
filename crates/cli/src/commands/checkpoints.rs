//! `oxydra undo`, `oxydra sessions rewind | fork | diff`: the workspace checkpoints
//! of stored sessions (see `oxydra::runtime::Checkpoints`).
//!
//! A file changed since its checkpoint by someone else is never overwritten silently:
//! with a person at the terminal (stdin and stderr both terminals) the diff is shown
//! and the person asked; otherwise the command refuses, names the files and exits 1.
//! `--force` overwrites without asking.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use oxydra::memory::{CheckpointStore, Memory};
use oxydra::runtime::{Checkpoints, CheckpointsError, Reverted, conflicts};
use oxydra::tools::checkpoint::Conflict;
use oxydra::types::SessionId;

use crate::args::{ListOptions, UndoArgs};
use crate::config::{self, CheckpointSettings, Database};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::setup::database::{MemoryStore, newest, open_for_listing};

/// The checkpoints of the database `options` name, kept and waited for as the
/// configuration says (`[checkpoints]`, `[runtime] session_wait_secs`), the database,
/// and those settings.
async fn open(
    options: &ListOptions,
) -> Result<
    (
        Checkpoints,
        Arc<dyn MemoryStore>,
        Database,
        CheckpointSettings,
    ),
    CliError,
> {
    let (db, origin, settings) = config::resolve_checkpoints(options)?;
    let Some(store) = open_for_listing(&db, &origin).await? else {
        return Err(CliError::Run {
            kind: "checkpoint".into(),
            message: format!("no session is stored yet in {}", db.shown_path().display()),
        });
    };
    let checkpoints: Arc<dyn CheckpointStore> = store.clone();
    let memory: Arc<dyn Memory> = store.clone();
    let handle = Checkpoints::new(checkpoints, memory, &settings.checkpoints)
        .session_wait(settings.session_wait);
    Ok((handle, store, db, settings))
}

/// Why there may be no checkpoint to take back: `[checkpoints] enabled = false`
/// (naming the file), as a sentence; empty when checkpoints are on.
fn off_note(settings: &CheckpointSettings) -> String {
    if settings.checkpoints.enabled {
        return String::new();
    }
    let at = settings
        .file
        .as_ref()
        .map_or_else(String::new, |path| format!(" in {}", path.display()));
    format!(
        "checkpoints are turned off (`[checkpoints] enabled = false`{at}): turns run since \
         record none, so their files cannot be put back"
    )
}

/// `error`, with why there is nothing to take back when checkpoints are off.
fn failed_with(error: &CheckpointsError, settings: &CheckpointSettings) -> CliError {
    let note = off_note(settings);
    match (error, failed(error)) {
        (CheckpointsError::NoCheckpoint { .. }, CliError::Run { kind, message })
            if !note.is_empty() =>
        {
            CliError::Run {
                kind,
                message: format!("{message}: {note}"),
            }
        }
        (_, other) => other,
    }
}

fn failed(error: &CheckpointsError) -> CliError {
    let kind = match error {
        CheckpointsError::Memory(_) => "memory",
        CheckpointsError::Busy(_) => "session_busy",
        _ => "checkpoint",
    };
    CliError::Run {
        kind: kind.into(),
        message: error.to_string(),
    }
}

/// The paths changed since the checkpoint, each with what was expected and found and
/// its diff: the workspace's own text, shown only through [`show`].
pub fn conflicts_text(conflicts: &[Conflict]) -> String {
    let mut text = String::from("these files changed since the checkpoint:\n");
    for conflict in conflicts {
        text.push_str(&format!(
            "  {}: expected {}, found {}\n",
            conflict.path,
            conflict.expected.describe(),
            conflict.found.describe()
        ));
        text.push_str(&conflict.diff);
    }
    text
}

/// Shows `text` on stderr through the terminal sanitizer: paths and diffs are the
/// workspace's (a model may have named a file or written its content), so an escape
/// sequence in them is shown, never run — nothing can hide or restyle a question.
pub fn show(text: &str) {
    eprint!("{}", crate::terminal_text::lines(text));
}

/// Asks the person at the terminal whether to overwrite `conflicts`, after showing
/// what would change; `false` when no one can answer.
fn ask(conflicts: &[Conflict]) -> bool {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    show(&conflicts_text(conflicts));
    let mut err = std::io::stderr().lock();
    // The diff may end anywhere and in any attributes: the question starts clean.
    let _ = crate::terminal_text::reset_before_question(&mut err, false);
    let _ = write!(err, "overwrite them? [y/N] ");
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes")
}

/// Runs `revert` unforced; on paths changed since, asks (or refuses) and runs it
/// forced when the person agrees.
async fn with_consent<F, Fut>(
    force: bool,
    settings: &CheckpointSettings,
    revert: F,
) -> Result<Reverted, CliError>
where
    F: Fn(bool) -> Fut,
    Fut: std::future::Future<Output = Result<Reverted, CheckpointsError>>,
{
    match revert(force).await {
        Ok(reverted) => Ok(reverted),
        Err(error) => match conflicts(&error) {
            Some(changed) if ask(changed) => {
                revert(true).await.map_err(|e| failed_with(&e, settings))
            }
            Some(changed) => Err(CliError::Run {
                kind: "checkpoint".into(),
                message: format!(
                    "not overwritten, changed since the checkpoint: {} (run with --force to \
                     overwrite)",
                    changed
                        .iter()
                        .map(|c| c.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
            None => Err(failed_with(&error, settings)),
        },
    }
}

/// What an undo or a rewind did, as lines for the person (shown through [`show`]).
pub fn reverted_text(what: &str, session: &SessionId, reverted: &Reverted) -> String {
    let turns: Vec<String> = reverted.turns.iter().map(u64::to_string).collect();
    let mut text = format!(
        "{what} session {session}: turn(s) {}; {} path(s) put back\n",
        turns.join(", "),
        reverted.paths.len()
    );
    for path in &reverted.paths {
        text.push_str(&format!("  {path}\n"));
    }
    for missing in &reverted.not_captured {
        text.push_str(&format!(
            "  not put back: {} ({} bytes, {} when captured)\n",
            missing.path,
            missing.bytes,
            missing.why()
        ));
    }
    for call in &reverted.irreversible {
        text.push_str(&format!("  cannot be undone: {call}\n"));
    }
    text
}

fn report(what: &str, session: &SessionId, reverted: &Reverted) {
    show(&reverted_text(what, session, reverted));
}

/// `oxydra undo`.
pub async fn undo(args: UndoArgs) -> Result<Exit, CliError> {
    let options = args.options.list_options();
    let (handle, store, db, settings) = open(&options).await?;
    let session = match &args.session {
        Some(id) => existing(store.as_ref(), &db, id).await?,
        None => {
            let dir = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
            let workspace = dir.canonicalize().map_err(|source| CliError::Io {
                what: "cannot resolve the workspace",
                path: dir.clone(),
                source,
            })?;
            newest(store.as_ref(), &db, &workspace)
                .await?
                .ok_or_else(|| CliError::Run {
                    kind: "checkpoint".into(),
                    message: format!("no session of {} is stored", workspace.display()),
                })?
        }
    };
    let reverted =
        with_consent(args.force, &settings, |force| handle.undo(&session, force)).await?;
    report("undid", &session, &reverted);
    Ok(Exit::Done)
}

async fn existing(store: &dyn MemoryStore, db: &Database, id: &str) -> Result<SessionId, CliError> {
    crate::setup::session_id::stored_session(store, db, id).await
}

/// `oxydra sessions rewind ID --to N`.
pub async fn rewind(
    id: &str,
    to: u64,
    force: bool,
    options: &ListOptions,
) -> Result<Exit, CliError> {
    let (handle, store, db, settings) = open(options).await?;
    let session = existing(store.as_ref(), &db, id).await?;
    let reverted =
        with_consent(force, &settings, |force| handle.rewind(&session, to, force)).await?;
    report("rewound", &session, &reverted);
    if let Some(kept) = reverted.messages_kept {
        eprintln!("  the conversation keeps its first {kept} message(s)");
    }
    let note = off_note(&settings);
    if reverted.turns.is_empty() && !note.is_empty() {
        eprintln!("  {note}");
    }
    Ok(Exit::Done)
}

/// `oxydra sessions fork ID --at N`: prints the new session's id.
pub async fn fork(id: &str, at: u64, options: &ListOptions) -> Result<Exit, CliError> {
    let (handle, store, db, _) = open(options).await?;
    let session = existing(store.as_ref(), &db, id).await?;
    let forked = handle.fork(&session, at).await.map_err(|e| failed(&e))?;
    println!("{forked}");
    Ok(Exit::Done)
}

/// `oxydra sessions diff ID [--turn N]`.
pub async fn diff(id: &str, turn: Option<u64>, options: &ListOptions) -> Result<Exit, CliError> {
    let (handle, store, db, settings) = open(options).await?;
    let session = existing(store.as_ref(), &db, id).await?;
    let text = handle
        .diff(&session, turn)
        .await
        .map_err(|e| failed_with(&e, &settings))?;
    // Paths and contents are the workspace's: sanitized on any stream, as every text
    // format is (a pipe ends at a terminal too).
    let mut out = std::io::stdout().lock();
    out.write_all(crate::terminal_text::lines(&text).as_bytes())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}
