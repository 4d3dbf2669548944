//! The one error type of `oxydra-memory`.

use std::path::PathBuf;

use oxydra_types::SessionId;
use thiserror::Error;

use crate::lease::SessionLease;

/// Why a memory operation failed. Errors about the database name its file.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// SQLite failed on the database at `path`.
    #[error("database {}: {action}: {source}", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored record could not be decoded.
    #[error("database {}: corrupt record {what}: {message}", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// Which record.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The database was written by a newer version of Oxydra.
    #[error(
        "database {}: schema version {found} is newer than this build supports ({supported}); upgrade Oxydra",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The version stored in the file.
        found: i64,
        /// The newest version this code knows.
        supported: i64,
    },
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embedding(String),
    /// Another run holds the session's lease: the session has one writer at a time.
    #[error(
        "session {} is in use by another run ({}); try again when it has finished",
        holder.session_id,
        holder.holder()
    )]
    SessionBusy {
        /// The lease the other run holds.
        holder: SessionLease,
    },
    /// This run's lease on the session is no longer its own: it lapsed (the run stopped
    /// renewing it for longer than its time to live) and another run may have taken it.
    #[error(
        "the lease on session {session} was lost: it lapsed and another run may have taken the session over"
    )]
    LeaseLost {
        /// The session.
        session: SessionId,
    },
    /// The blocking task running the SQLite work was lost.
    #[error("memory worker stopped: {0}")]
    Worker(String),
}

impl MemoryError {
    /// A [`MemoryError::Database`] for `path` while doing `action`.
    pub(crate) fn db(path: &std::path::Path, action: &str, source: rusqlite::Error) -> Self {
        Self::Database {
            path: path.to_path_buf(),
            action: action.to_owned(),
            source,
        }
    }
}
