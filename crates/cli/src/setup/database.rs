//! The database behind memory and the coordinator, opened through the facade's storage
//! table (`oxydra::storage`: a SQLite file or a server backend's URL, see
//! [`Database`]); and the reads of stored sessions that `run`, `chat` and `sessions`
//! share.

use std::path::Path;
use std::sync::Arc;

use oxydra::memory::SessionInfo;
pub use oxydra::storage::MemoryStore;
use oxydra::storage::{StorageError, StoreOptions};
use oxydra::types::{MessageRole, SessionId};

use crate::config::Database;
use crate::error::CliError;
use crate::output::listing::{Listed, one_line_prompt};

/// Opens (or creates) the memory at `db` (from `origin`, e.g. `--db`) with the default
/// options: connects to the server, or opens the SQLite file, its directory made
/// owner-only (`0700`) and the file `0600`.
pub async fn open(db: &Database, origin: &str) -> Result<Arc<dyn MemoryStore>, CliError> {
    open_with(db, origin, StoreOptions::default()).await
}

/// [`open`] with `options` (`[memory] max_message_bytes`).
pub async fn open_with(
    db: &Database,
    origin: &str,
    options: StoreOptions,
) -> Result<Arc<dyn MemoryStore>, CliError> {
    oxydra::storage::open_memory_with(db, options)
        .await
        .map_err(|error| storage_error(db, origin, error))
}

/// A failure to open `db` (from `origin`): a server that cannot be reached names the
/// origin and the server, never the password; a file names itself.
pub fn storage_error(db: &Database, origin: &str, error: StorageError) -> CliError {
    match error {
        StorageError::CreateDir { dir, source } => CliError::Io {
            what: "cannot create the database directory",
            path: dir,
            source,
        },
        StorageError::Connect { message, .. } => CliError::Memory {
            path: db.shown_path(),
            message: format!("{message} (the database comes from {origin})"),
        },
        other => memory_error(db, other),
    }
}

/// Opens an existing database; `None` when it is a file that does not exist (nothing
/// stored yet).
pub async fn open_existing(
    db: &Database,
    origin: &str,
) -> Result<Option<Arc<dyn MemoryStore>>, CliError> {
    if db.sqlite_path().is_some_and(|path| !path.exists()) {
        return Ok(None);
    }
    open(db, origin).await.map(Some)
}

/// Opens the database the listing commands read. A database named on purpose (`--db`,
/// `OXYDRA_DB`, `[memory] db`) that does not exist is an error (a mistyped path would
/// otherwise look like an empty store); the default one not existing yet is `None`.
pub async fn open_for_listing(
    db: &Database,
    origin: &str,
) -> Result<Option<Arc<dyn MemoryStore>>, CliError> {
    if let Some(path) = db.sqlite_path()
        && !path.exists()
        && crate::config::default_db_path().as_deref() != Some(path)
    {
        return Err(CliError::DatabaseMissing {
            path: path.to_path_buf(),
        });
    }
    open_existing(db, origin).await
}

/// A memory failure naming the database.
pub fn memory_error(db: &Database, error: impl std::fmt::Display) -> CliError {
    CliError::Memory {
        path: db.shown_path(),
        message: error.to_string(),
    }
}

/// The stored sessions, the most recently used first (at most `limit`), each with its
/// first prompt.
pub async fn listing(
    memory: &dyn MemoryStore,
    db: &Database,
    limit: Option<usize>,
) -> Result<Vec<Listed>, CliError> {
    Ok(listing_in(memory, db, limit, None).await?.0)
}

/// [`listing`] of the sessions that worked in `workspace` (all when `None`), and how
/// many others there are (other workspaces, or none recorded).
pub async fn listing_in(
    memory: &dyn MemoryStore,
    db: &Database,
    limit: Option<usize>,
    workspace: Option<&Path>,
) -> Result<(Vec<Listed>, usize), CliError> {
    let mut sessions = memory
        .list_sessions()
        .await
        .map_err(|error| memory_error(db, error))?;
    let all = sessions.len();
    if let Some(workspace) = workspace {
        sessions.retain(|session| worked_in(session, workspace));
    }
    let elsewhere = all - sessions.len();
    sessions.sort_by_key(|session| std::cmp::Reverse(session.updated_at_ms));
    if let Some(limit) = limit {
        sessions.truncate(limit);
    }
    let mut listed = Vec::with_capacity(sessions.len());
    for info in sessions {
        let messages = memory
            .messages(&info.session_id)
            .await
            .map_err(|error| memory_error(db, error))?;
        let first_prompt = messages
            .iter()
            .find(|stored| stored.message.role == MessageRole::User)
            .and_then(|stored| stored.message.content.as_deref())
            .map(one_line_prompt);
        listed.push(Listed { info, first_prompt });
    }
    Ok((listed, elsewhere))
}

/// Whether `session` recorded `workspace` as the one its last run worked in.
fn worked_in(session: &SessionInfo, workspace: &Path) -> bool {
    session
        .workspace
        .as_deref()
        .is_some_and(|recorded| Path::new(recorded) == workspace)
}

/// The newest stored session that worked in `workspace` (`--continue`), if any.
/// Sessions of other workspaces, and those stored before sessions recorded theirs, are
/// never picked.
pub async fn newest(
    memory: &dyn MemoryStore,
    db: &Database,
    workspace: &Path,
) -> Result<Option<SessionId>, CliError> {
    let sessions = memory
        .list_sessions()
        .await
        .map_err(|error| memory_error(db, error))?;
    Ok(newest_in(sessions, workspace))
}

fn newest_in(sessions: Vec<SessionInfo>, workspace: &Path) -> Option<SessionId> {
    sessions
        .into_iter()
        .filter(|session| worked_in(session, workspace))
        .max_by_key(|session| session.updated_at_ms)
        .map(|session| session.session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_picks_the_newest_session_of_this_workspace_only() {
        let session = |id: &str, updated_at_ms: i64, workspace: Option<&str>| SessionInfo {
            session_id: SessionId::from(id),
            created_at_ms: 0,
            updated_at_ms,
            messages: 1,
            model: None,
            agent: None,
            workspace: workspace.map(str::to_owned),
            replay_of: None,
        };
        let sessions = vec![
            session("ses_here_old", 1, Some("/work/app")),
            session("ses_here_new", 2, Some("/work/app")),
            session("ses_elsewhere", 9, Some("/work/other")),
            session("ses_unrecorded", 10, None),
        ];
        assert_eq!(
            newest_in(sessions.clone(), Path::new("/work/app")),
            Some(SessionId::from("ses_here_new"))
        );
        assert_eq!(newest_in(sessions, Path::new("/work/none")), None);
    }
}
