//! What a batch runs in: its id, session, workspace and cancellation.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use oxydra_types::SessionId;
use tokio_util::sync::CancellationToken;

static NEXT_BATCH: AtomicU64 = AtomicU64::new(1);

/// Identifies a batch: the span of processing (one user message and its heartbeat
/// continuations) that per-batch rule state (`max_calls`, `exclusive_group`) is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BatchId(pub u64);

impl BatchId {
    /// A fresh id, unique in this process.
    pub fn next() -> Self {
        Self(NEXT_BATCH.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Display for BatchId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "batch-{}", self.0)
    }
}

/// Where and for whom calls run.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// The batch whose per-batch rule state applies.
    pub batch_id: BatchId,
    /// The session (dedupe and session-scoped grants are kept per session).
    pub session_id: SessionId,
    /// Root directory the file tools work in.
    pub workspace_root: PathBuf,
    /// Cancels pending and running calls; each running tool gets a child token.
    pub cancel: CancellationToken,
}

impl ExecutionContext {
    /// A context with a fresh batch id and a new cancellation token.
    pub fn new(session_id: SessionId, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            batch_id: BatchId::next(),
            session_id,
            workspace_root: workspace_root.into(),
            cancel: CancellationToken::new(),
        }
    }

    /// The same context with another batch id.
    pub fn with_batch(mut self, batch_id: BatchId) -> Self {
        self.batch_id = batch_id;
        self
    }

    /// The same context with another cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_ids_are_fresh() {
        let a = BatchId::next();
        let b = BatchId::next();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), format!("batch-{}", a.0));
    }
}
