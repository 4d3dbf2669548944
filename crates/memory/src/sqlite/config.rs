//! How a [`SqliteMemory`](crate::SqliteMemory) is opened.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::RetrievalConfig;
use crate::embedder::{Embedder, HashingEmbedder};
use crate::message_codec::DEFAULT_MAX_MESSAGE_BYTES;

/// SQLite's `synchronous` setting for the write-ahead log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `NORMAL`: a committed transaction survives a crash or kill of the process; the
    /// last transactions may be lost on power loss or an OS crash. The default.
    #[default]
    Normal,
    /// `FULL`: the WAL is synced on every commit, so commits also survive power loss.
    Full,
}

impl Synchronous {
    /// The pragma value.
    pub fn as_pragma(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
        }
    }
}

/// Options for [`SqliteMemory::open`](crate::SqliteMemory::open).
#[derive(Clone)]
pub struct SqliteConfig {
    /// Durability of commits; default [`Synchronous::Normal`].
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's lock before failing; default 5 s.
    pub busy_timeout: Duration,
    /// Turns chunks and queries into vectors; default [`HashingEmbedder`].
    pub embedder: Arc<dyn Embedder>,
    /// Score weights and chunking.
    pub retrieval: RetrievalConfig,
    /// The largest one message may be as stored (its JSON, images and documents
    /// included, base64-encoded); default [`DEFAULT_MAX_MESSAGE_BYTES`] (32 MiB). An
    /// append with a larger message fails with
    /// [`MemoryError::MessageTooLarge`](crate::MemoryError::MessageTooLarge).
    pub max_message_bytes: usize,
    /// The store will be written to soon (a run's first write follows its open): the
    /// open starts the write-ahead log in the background, so that the syncs SQLite runs
    /// at a log's first frame (its header's, then its directory's) are behind the
    /// caller's first write instead of inside it. It commits one page, the database
    /// header rewritten as it was; default `false`, so that a store opened to be read
    /// writes nothing. An in-memory database ignores it.
    pub start_log_at_open: bool,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            embedder: Arc::new(HashingEmbedder::default()),
            retrieval: RetrievalConfig::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            start_log_at_open: false,
        }
    }
}

impl fmt::Debug for SqliteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteConfig")
            .field("synchronous", &self.synchronous)
            .field("busy_timeout", &self.busy_timeout)
            .field("embedder", &self.embedder.model())
            .field("retrieval", &self.retrieval)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("start_log_at_open", &self.start_log_at_open)
            .finish()
    }
}
