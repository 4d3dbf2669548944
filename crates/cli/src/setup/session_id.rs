//! A stored session named on the command line (`sessions show|delete ID`, `--session
//! ID`, chat's `/switch ID`): its whole id, or, as git takes a commit, any prefix of it
//! that names exactly one stored session.

use oxydra::types::SessionId;

use super::database::{MemoryStore, memory_error};
use crate::config::Database;
use crate::error::CliError;

/// How many of the sessions a prefix names an ambiguity error lists.
const SHOWN_CANDIDATES: usize = 5;

/// The stored session `id` names: the session of that exact id, else the only one
/// whose id starts with it. None is [`CliError::SessionNotFound`]; several is
/// [`CliError::AmbiguousSession`], listing some of them.
pub async fn stored_session(
    memory: &dyn MemoryStore,
    db: &Database,
    id: &str,
) -> Result<SessionId, CliError> {
    let exact = SessionId::from(id);
    let exists = memory
        .session_exists(&exact)
        .await
        .map_err(|error| memory_error(db, error))?;
    if exists {
        return Ok(exact);
    }
    let not_found = || CliError::SessionNotFound {
        id: id.to_owned(),
        db: db.shown_path(),
    };
    if id.is_empty() {
        return Err(not_found());
    }
    let sessions = memory
        .list_sessions()
        .await
        .map_err(|error| memory_error(db, error))?;
    let mut matching = sessions
        .into_iter()
        .map(|info| info.session_id)
        .filter(|session| session.as_str().starts_with(id));
    let Some(first) = matching.next() else {
        return Err(not_found());
    };
    let rest: Vec<SessionId> = matching.collect();
    if rest.is_empty() {
        return Ok(first);
    }
    let count = rest.len() + 1;
    let shown = std::iter::once(first)
        .chain(rest)
        .take(SHOWN_CANDIDATES)
        .map(|session| session.as_str().to_owned())
        .collect();
    Err(CliError::AmbiguousSession {
        prefix: id.to_owned(),
        count,
        shown,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use oxydra::memory::{Memory, SqliteConfig, SqliteMemory};
    use oxydra::types::Message;

    use super::*;

    async fn store(ids: &[&str]) -> (tempfile::TempDir, Arc<SqliteMemory>, Database) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let memory = Arc::new(
            SqliteMemory::open_async(&path, SqliteConfig::default())
                .await
                .unwrap(),
        );
        for id in ids {
            memory
                .append(&SessionId::from(*id), &Message::user("hi"))
                .await
                .unwrap();
        }
        (dir, memory, Database::Sqlite(path))
    }

    #[tokio::test]
    async fn a_unique_prefix_names_its_session_and_an_exact_id_always_wins() {
        let (_dir, memory, db) = store(&["ses_abc123", "ses_abd456", "ses_ab"]).await;
        let found = stored_session(memory.as_ref(), &db, "ses_abc")
            .await
            .unwrap();
        assert_eq!(found.as_str(), "ses_abc123");
        // `ses_ab` is a whole id and a prefix of the others: the whole id wins.
        let found = stored_session(memory.as_ref(), &db, "ses_ab")
            .await
            .unwrap();
        assert_eq!(found.as_str(), "ses_ab");
    }

    #[tokio::test]
    async fn an_ambiguous_or_unknown_prefix_says_so() {
        let (_dir, memory, db) = store(&["ses_abc123", "ses_abd456"]).await;
        let error = stored_session(memory.as_ref(), &db, "ses_a")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("ses_abc123") && error.contains("ses_abd456"),
            "{error}"
        );
        assert!(error.contains("2 sessions"), "{error}");
        for unknown in ["ses_x", "", "%", "ses_a%"] {
            let error = stored_session(memory.as_ref(), &db, unknown)
                .await
                .unwrap_err();
            assert!(
                matches!(error, CliError::SessionNotFound { .. }),
                "{unknown}: {error}"
            );
        }
    }
}
