//! Storage of workspace checkpoints: each turn's [`Checkpoint`] of a session, and the
//! file contents they need, stored once by content hash.

use async_trait::async_trait;
use oxydra_types::{Checkpoint, SessionId};

use crate::error::MemoryError;

/// A checkpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// Its id in the store.
    pub id: i64,
    /// The session whose turn it records.
    pub session_id: SessionId,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
}

/// A file content a checkpoint needs: its hash (lowercase hex SHA-256, as in the
/// checkpoint's entries) and its bytes. Stores keep one copy per hash; whoever reads
/// one back checks the bytes against the hash before using them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointBlob {
    /// The content hash.
    pub hash: String,
    /// The content.
    pub content: Vec<u8>,
}

/// Where checkpoints are kept. Every call is durable when it returns.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Stores `checkpoint` for `session` with the contents it names (replacing the
    /// session's checkpoint of the same turn), then keeps only the newest `keep_last`
    /// checkpoints of the session and drops the contents no kept checkpoint needs.
    /// Returns the checkpoint's id. All or nothing.
    async fn store_checkpoint(
        &self,
        session: &SessionId,
        checkpoint: &Checkpoint,
        blobs: &[CheckpointBlob],
        keep_last: usize,
    ) -> Result<i64, MemoryError>;

    /// The session's checkpoints, oldest turn first (empty for an unknown session).
    async fn checkpoints(&self, session: &SessionId) -> Result<Vec<StoredCheckpoint>, MemoryError>;

    /// The content stored under `hash`, if any.
    async fn checkpoint_blob(&self, hash: &str) -> Result<Option<Vec<u8>>, MemoryError>;

    /// Deletes the session's checkpoints of turns `from_turn` and later (a rewind
    /// takes them back), and the contents no other checkpoint needs.
    async fn delete_checkpoints_from(
        &self,
        session: &SessionId,
        from_turn: u64,
    ) -> Result<(), MemoryError>;

    /// Takes the conversation back: deletes the session's messages after sequence
    /// `keep_through`, and its rolling summary when that covered any of them.
    async fn truncate_messages(
        &self,
        session: &SessionId,
        keep_through: u64,
    ) -> Result<(), MemoryError>;
}
