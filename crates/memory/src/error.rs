//! The one error type of `oxydra-memory`.

use std::path::PathBuf;

use thiserror::Error;

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
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embedding(String),
    /// The blocking task running the SQLite work was lost.
    #[error("memory worker stopped: {0}")]
    Worker(String),
}
