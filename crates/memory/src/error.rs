//! The one error type of `oxydra-memory`.

use oxydra_types::SessionId;
use thiserror::Error;

use crate::lease::SessionLease;

/// Why a memory operation failed. Backend-neutral: a backend converts its own errors at
/// its edge into these variants, keeping what it was doing and the driver's message.
/// Errors about the database name it (a file path, a server and database name).
#[derive(Debug, Error)]
pub enum MemoryError {
    /// The storage backend failed while doing `action` on the database at `location`.
    #[error("{backend} database {location}: {action}: {message}")]
    Storage {
        /// Which backend (`sqlite`, `postgres`).
        backend: &'static str,
        /// The database: a file path or a server and database name.
        location: String,
        /// What was being done.
        action: String,
        /// The backend's own message.
        message: String,
    },
    /// A stored record could not be decoded.
    #[error("database {location}: corrupt record {what}: {message}")]
    Corrupt {
        /// The database.
        location: String,
        /// Which record.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The database was written by a newer version of Oxydra.
    #[error(
        "database {location}: schema version {found} is newer than this build supports ({supported}); upgrade Oxydra"
    )]
    SchemaTooNew {
        /// The database.
        location: String,
        /// The version stored in the database.
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
    /// The task running the storage work was lost.
    #[error("memory worker stopped: {0}")]
    Worker(String),
    /// A message is larger, as stored, than the database takes for one message
    /// (`max_message_bytes`): nothing of the append was stored.
    #[error(
        "database {location}: {what} of session {session} is {bytes} bytes as stored, over the \
         {limit}-byte limit for one message (max_message_bytes); nothing of it was stored"
    )]
    MessageTooLarge {
        /// The database.
        location: String,
        /// The session.
        session: SessionId,
        /// Which message: its role, and its parts (images, documents) when it has any.
        what: String,
        /// Its size as stored (its JSON).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}
