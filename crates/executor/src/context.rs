//! What a batch of calls runs in: its session run, session, workspace and cancellation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use oxydra_types::SessionId;
use tokio_util::sync::CancellationToken;

use crate::consent_clock::ConsentClock;
use crate::intent_journal::IntentJournal;
use crate::provenance::ProvenanceLedger;

static NEXT_SESSION_RUN: AtomicU64 = AtomicU64::new(1);

/// Identifies one session run: one user message and every turn and heartbeat
/// continuation that follows it (one run of the runtime; one step of a
/// deterministic blueprint). Per-run rule state (`max_calls`, `exclusive_group`) is kept
/// for it across the run's batches, each batch being one turn's tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionRunId(pub u64);

impl SessionRunId {
    /// A fresh id, unique in this process.
    pub fn next() -> Self {
        Self(NEXT_SESSION_RUN.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Display for SessionRunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run-{}", self.0)
    }
}

/// Where and for whom calls run.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// The session run whose per-run rule state applies.
    pub session_run: SessionRunId,
    /// The session (dedupe and session-scoped grants are kept per session).
    pub session_id: SessionId,
    /// Root directory the file tools work in.
    pub workspace_root: PathBuf,
    /// Cancels pending and running calls; each running tool gets a child token.
    pub cancel: CancellationToken,
    /// Stopped while the permission broker is asked: a batch timed on it
    /// ([`ConsentClock::run_out`]) does not count the time a person takes to answer.
    pub consent_clock: ConsentClock,
    /// The untrusted sources the session has read since a person last decided: a
    /// side-effecting or privileged call the executor's
    /// [`ProvenancePolicy`](crate::ProvenancePolicy) holds on one of them waits for a
    /// person. Empty in a fresh context.
    pub provenance: ProvenanceLedger,
    /// Where the intent of each side-effecting or privileged call is stored before it
    /// runs, and its outcome after ([`IntentJournal`]); `None` (a fresh context):
    /// nothing is recorded and tools get no idempotency key.
    pub intents: Option<Arc<dyn IntentJournal>>,
}

impl ExecutionContext {
    /// A context with a fresh session run id and a new cancellation token.
    pub fn new(session_id: SessionId, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            session_run: SessionRunId::next(),
            session_id,
            workspace_root: workspace_root.into(),
            cancel: CancellationToken::new(),
            consent_clock: ConsentClock::new(),
            provenance: ProvenanceLedger::new(),
            intents: None,
        }
    }

    /// The same context recording intents and outcomes in `journal`.
    pub fn with_intent_journal(mut self, journal: Arc<dyn IntentJournal>) -> Self {
        self.intents = Some(journal);
        self
    }

    /// The same context in another session run.
    pub fn with_session_run(mut self, session_run: SessionRunId) -> Self {
        self.session_run = session_run;
        self
    }

    /// The same context reading (and clearing) `provenance`.
    pub fn with_provenance(mut self, provenance: ProvenanceLedger) -> Self {
        self.provenance = provenance;
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
    fn session_run_ids_are_fresh() {
        let a = SessionRunId::next();
        let b = SessionRunId::next();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), format!("run-{}", a.0));
    }
}
