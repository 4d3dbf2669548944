//! How a [`SqliteMemory`](crate::SqliteMemory) is opened and how it retrieves.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::embedder::{Embedder, HashingEmbedder};

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

/// How search scores are merged and texts are chunked.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalConfig {
    /// Weight of the (min-max normalised) vector cosine score; default 0.7.
    pub vector_weight: f32,
    /// Weight of the (min-max normalised) FTS5 BM25 score; default 0.3.
    pub text_weight: f32,
    /// Longest chunk, in characters; default 1,000.
    pub chunk_max_chars: usize,
    /// Characters shared by neighbouring chunks; default 200.
    pub chunk_overlap: usize,
    /// How many candidates each list contributes before merging, at least; default 50.
    pub min_candidates: usize,
    /// Query words found in more chunks than this are left out of the full-text search
    /// (unless all are, then the rarest is kept): they rank little and cost a lot;
    /// default 2,000.
    pub max_term_docs: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            vector_weight: 0.7,
            text_weight: 0.3,
            chunk_max_chars: 1000,
            chunk_overlap: 200,
            min_candidates: 50,
            max_term_docs: 2_000,
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
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            embedder: Arc::new(HashingEmbedder::default()),
            retrieval: RetrievalConfig::default(),
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
            .finish()
    }
}
