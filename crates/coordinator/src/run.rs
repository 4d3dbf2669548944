//! Runs: one execution of a blueprint with validated parameters.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use oxydra_types::{RunId, SessionId};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a run is in its life: `pending → running → completed | failed | cancelled`
/// (a pending run may also go straight to `cancelled`, or to `failed` when the
/// coordinator restarts before it ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, waiting for a worker.
    Pending,
    /// A worker is executing it.
    Running,
    /// It finished; `result` holds what it produced.
    Completed,
    /// It ended in an error; `error` says which.
    Failed,
    /// It was cancelled (`DELETE /runs/{id}`).
    Cancelled,
}

impl RunStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "pending" => Self::Pending,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Whether the run has ended (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run failed (or was cancelled): a stable snake_case `kind` and a message.
///
/// Kinds: `interrupted` (the coordinator stopped while it was pending or running),
/// `cancelled`, `step_failed` (a deterministic step), `budget_exceeded`, `provider`,
/// `memory`, `config`, `runtime`, `internal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// The kind of failure.
    pub kind: String,
    /// What happened.
    pub message: String,
    /// More detail where there is any (the failed step and tool, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

impl RunError {
    /// An error of `kind` with `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            detail: None,
        }
    }

    /// The same error with `detail`.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// The error of a run cut short by a coordinator stop or restart.
    pub fn interrupted() -> Self {
        Self::new(
            "interrupted",
            "the coordinator stopped before the run finished",
        )
    }

    /// The error of a cancelled run.
    pub fn cancelled() -> Self {
        Self::new("cancelled", "the run was cancelled")
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// A run as stored and as `GET /runs/{id}` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its id.
    pub run_id: String,
    /// The blueprint it runs.
    pub agent_name: String,
    /// Where it is.
    pub status: RunStatus,
    /// The validated parameters.
    pub parameters: Value,
    /// What it produced (completed runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed or was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When a worker started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
}

/// A random start for this process's id counter.
static ID_BASE: LazyLock<u64> = LazyLock::new(|| {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(now_millis());
    hasher.finish()
});
static ID_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh run id: `run_`, 12 hex digits of milliseconds since the epoch, then 7 hex
/// digits from a per-process random start plus a counter (unique for 2^28 ids within
/// a millisecond). Kept at 23 characters, under the 24 at which the scrubber starts
/// judging strings as possible secrets, so ids survive the scrubbing of tool output
/// an orchestrating agent reads.
pub(crate) fn new_run_id() -> RunId {
    let count = ID_COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = ID_BASE.wrapping_add(count) & 0x0fff_ffff;
    let millis = now_millis() & 0xffff_ffff_ffff;
    RunId::from(format!("run_{millis:012x}{suffix:07x}"))
}

/// The session an AI agent run talks in: the run id with `ses_` for `run_`.
pub(crate) fn session_for(run_id: &RunId) -> SessionId {
    let suffix = run_id
        .as_str()
        .strip_prefix("run_")
        .unwrap_or(run_id.as_str());
    SessionId::from(format!("ses_{suffix}"))
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_know_when_they_end() {
        for status in [
            RunStatus::Pending,
            RunStatus::Running,
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ] {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
        }
        assert!(RunStatus::parse("done").is_none());
        assert!(!RunStatus::Running.is_terminal());
        assert!(RunStatus::Cancelled.is_terminal());
    }

    #[test]
    fn run_ids_are_unique_short_and_scrub_safe() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| new_run_id().into_string()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(200) {
            assert!(id.starts_with("run_") && id.len() == 23, "{id}");
            let text = format!("{{\"run_id\":\"{id}\"}}");
            assert_eq!(oxydra_scrubbing::scrub(&text).text, text.as_str());
        }
        let session = session_for(&RunId::from("run_abc"));
        assert_eq!(session.as_str(), "ses_abc");
    }

    #[test]
    fn errors_serialise_without_empty_detail() {
        let value = serde_json::to_value(RunError::interrupted()).unwrap();
        assert_eq!(value["kind"], "interrupted");
        assert!(value.get("detail").is_none());
        let detailed =
            RunError::new("step_failed", "boom").with_detail(serde_json::json!({"step": 1}));
        assert_eq!(detailed.to_string(), "step_failed: boom");
        assert_eq!(serde_json::to_value(detailed).unwrap()["detail"]["step"], 1);
    }
}
