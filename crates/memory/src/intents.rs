//! Intents and outcomes of side-effecting tool calls, so that a run resumed after a
//! crash never repeats a side effect blindly.
//!
//! Before a side-effecting or privileged call runs, its [`ToolIntent`] is stored (and
//! durable: write-through); after it ran, its [`IntentOutcome`]. A process killed in
//! between leaves an intent without an outcome: the call may or may not have taken
//! effect, and the runtime asks the tool before anything runs it again.

use async_trait::async_trait;
use oxydra_types::{CallId, SessionId};

use crate::error::MemoryError;

/// A side-effecting call about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolIntent {
    /// The session whose call it is.
    pub session_id: SessionId,
    /// The call's idempotency key: unique in the store, stable for the call (the same
    /// call run again after a crash has the same key).
    pub key: String,
    /// The call's id, as the model gave it.
    pub call_id: CallId,
    /// The tool.
    pub tool: String,
    /// SHA-256 (lowercase hex) of the arguments the tool got, as canonical JSON.
    pub args_digest: String,
    /// What the tool recorded of the state its call changes, just before it ran
    /// ([`Tool::state_before`](https://docs.rs/oxydra-tools)); `None`: nothing.
    pub before: Option<String>,
    /// When it was stored (ms since the Unix epoch).
    pub created_at_ms: i64,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentStatus {
    /// It returned output.
    Completed,
    /// It returned an error (or panicked, or timed out).
    Failed,
}

impl IntentStatus {
    /// The stored name (`completed`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// The status a stored name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// What became of an intent's call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentOutcome {
    /// Completed or failed.
    pub status: IntentStatus,
    /// SHA-256 (lowercase hex) of the result's text (the output, or the error).
    pub result_digest: String,
    /// When it finished (ms since the Unix epoch).
    pub finished_at_ms: i64,
}

/// An intent as stored, with its outcome once there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIntent {
    /// The intent.
    pub intent: ToolIntent,
    /// Its outcome; `None` while the call runs — or when the process died before the
    /// outcome was stored: then nobody knows whether the call took effect.
    pub outcome: Option<IntentOutcome>,
}

/// Where intents and outcomes are kept. Every call is durable when it returns. A
/// session's intents go with it when it is deleted.
#[async_trait]
pub trait IntentStore: Send + Sync {
    /// Stores `intent` (replacing an intent with the same key, and its outcome: the
    /// same call run again).
    async fn store_intent(&self, intent: &ToolIntent) -> Result<(), MemoryError>;

    /// Stores the outcome of the intent `key` of `session`; returns whether there was
    /// such an intent (nothing is stored otherwise).
    async fn store_intent_outcome(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &IntentOutcome,
    ) -> Result<bool, MemoryError>;

    /// The intent `key` of `session` with its outcome, if one was stored.
    async fn intent(
        &self,
        session: &SessionId,
        key: &str,
    ) -> Result<Option<StoredIntent>, MemoryError>;

    /// The session's intents, oldest first (empty for an unknown session).
    async fn intents(&self, session: &SessionId) -> Result<Vec<StoredIntent>, MemoryError>;

    /// The session's intents without an outcome (calls running now, or interrupted),
    /// oldest first: what a new call that repeats one looks for, without reading every
    /// intent the session ever stored.
    async fn unfinished_intents(&self, session: &SessionId)
    -> Result<Vec<ToolIntent>, MemoryError>;
}
