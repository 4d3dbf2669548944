//! Why an undo, rewind, fork or diff did not happen.

use oxydra_memory::MemoryError;
use oxydra_tools::checkpoint::CheckpointError;
use oxydra_types::SessionId;

/// An undo, rewind, fork or diff that failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointsError {
    /// The session has no checkpoint to undo (or none from that turn).
    #[error("session {session} has no checkpoint{}", turn.map(|t| format!(" from turn {t}")).unwrap_or_default())]
    NoCheckpoint {
        /// The session.
        session: SessionId,
        /// The turn asked for, if one was.
        turn: Option<u64>,
    },
    /// The session has no such turn.
    #[error("session {session} has no turn {turn} (it has {turns})")]
    NoTurn {
        /// The session.
        session: SessionId,
        /// The turn asked for.
        turn: u64,
        /// How many turns it has.
        turns: u64,
    },
    /// The restore was refused or failed (see [`CheckpointError::Conflicts`] for paths
    /// someone else changed since).
    #[error(transparent)]
    Restore(#[from] CheckpointError),
    /// A run holds the session (or another undo or rewind does): nothing was changed.
    #[error("{0}; nothing was changed")]
    Busy(#[source] MemoryError),
    /// The store failed.
    #[error("memory error: {0}")]
    Memory(#[from] MemoryError),
    /// The blocking task of a restore did not finish.
    #[error("the restore did not finish: {0}")]
    Worker(String),
}
