//! Runs: one execution of a blueprint with validated parameters.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use oxydra_runtime::PendingApproval;
use oxydra_types::{RunId, SessionId};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run_usage::RunUsage;

/// Where a run is in its life: `pending → running → completed | failed | cancelled`
/// (a pending run may also go straight to `cancelled`, or to `failed` when the
/// coordinator restarts before it ran). A running run whose tool call needs a person's
/// consent goes `running → waiting_approval`, and back to `pending` (queued again)
/// once every pending approval is decided; a waiting run may be cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, waiting for a worker.
    Pending,
    /// A worker is executing it.
    Running,
    /// It stopped before a tool call that needs a person's decision (its
    /// `pending_approvals`); no worker holds it.
    WaitingApproval,
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
            Self::WaitingApproval => "waiting_approval",
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
            "waiting_approval" => Self::WaitingApproval,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// Where it sits in its run tree: the run the tree started from, the run that
    /// started this one and how deep it is (see [`RunLineage`]).
    #[serde(flatten)]
    pub lineage: RunLineage,
    /// On the root of a tree: how many runs were started in the tree and what their
    /// provider calls cost so far (zero on other runs).
    #[serde(flatten)]
    pub tree: RunTreeUsage,
    /// What it used of its budgets so far (turns, tokens, cost), over every worker
    /// that ran it.
    #[serde(default)]
    pub usage: RunUsage,
    /// While the run is `waiting_approval`: the tool calls that wait for a decision
    /// (`POST /runs/{id}/approvals/{approval_id}`); empty (and omitted) otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<crate::api_schemas::PendingApprovalDoc>)]
    pub pending_approvals: Vec<PendingApproval>,
}

impl Run {
    /// A new pending run of `agent_name` with `parameters`, created now, at `lineage`.
    pub fn pending(
        run_id: impl Into<String>,
        agent_name: impl Into<String>,
        parameters: Value,
        lineage: RunLineage,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            agent_name: agent_name.into(),
            status: RunStatus::Pending,
            parameters,
            result: None,
            error: None,
            created_at: now_millis(),
            started_at: None,
            finished_at: None,
            lineage,
            tree: RunTreeUsage::default(),
            usage: RunUsage::default(),
            pending_approvals: Vec::new(),
        }
    }
}

/// Where a run sits in its run tree. A run started through the API (or the library)
/// is a root: `root_run_id` is its own id and `depth` 0. A run an agent starts with
/// `start_agent_run` has its starter's root, its starter as `parent_run_id` and one
/// more depth.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunLineage {
    /// The root of the tree (the run's own id for a root).
    #[serde(default)]
    pub root_run_id: String,
    /// The run that started this one (none for a root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// How many runs lie between it and the root (0 for a root).
    #[serde(default)]
    pub depth: u32,
}

impl RunLineage {
    /// The lineage of a root run `run_id`.
    pub fn root(run_id: impl Into<String>) -> Self {
        Self {
            root_run_id: run_id.into(),
            parent_run_id: None,
            depth: 0,
        }
    }

    /// Whether it is a root (no parent).
    pub fn is_root(&self) -> bool {
        self.parent_run_id.is_none()
    }
}

/// What a run tree has used, kept on its root run.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunTreeUsage {
    /// Runs started in the tree, the root not counted.
    #[serde(default)]
    pub tree_runs: u32,
    /// US dollars spent by the provider calls of every run in the tree, the root's own
    /// included.
    #[serde(default)]
    pub tree_cost: f64,
}

/// A fresh run id: `run_` and 32 hex digits of 128 bits from the operating system's
/// random source (through `rand`'s cryptographic thread generator), so that no id can
/// be guessed from another: knowing one run's id tells nothing of the next. Runs are
/// ordered by `created_at`, never by id. Hex behind a short lowercase prefix is what
/// the scrubber treats as an id, so ids survive the scrubbing of tool output an
/// orchestrating agent reads.
pub(crate) fn new_run_id() -> RunId {
    let bits: u128 = rand::random();
    RunId::from(format!("run_{bits:032x}"))
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
            RunStatus::WaitingApproval,
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
        assert!(!RunStatus::WaitingApproval.is_terminal());
        assert_eq!(
            serde_json::to_string(&RunStatus::WaitingApproval).unwrap(),
            "\"waiting_approval\""
        );
        assert!(RunStatus::Cancelled.is_terminal());
    }

    #[test]
    fn run_ids_are_unique_unguessable_and_scrub_safe() {
        let ordered: Vec<String> = (0..10_000).map(|_| new_run_id().into_string()).collect();
        let ids: std::collections::HashSet<&String> = ordered.iter().collect();
        assert_eq!(ids.len(), 10_000);
        // Consecutive ids share no prefix beyond chance: nothing (time, a counter)
        // links one to the next. 16 shared leading hex digits by chance is 2^-64.
        for pair in ordered.windows(2) {
            let shared = pair[0]
                .bytes()
                .zip(pair[1].bytes())
                .skip(4)
                .take_while(|(a, b)| a == b)
                .count();
            assert!(shared < 16, "{} then {}", pair[0], pair[1]);
        }
        // Every bit position varies: no constant or clock field.
        let mut seen_one = [false; 128];
        let mut seen_zero = [false; 128];
        for id in ordered.iter().take(1000) {
            let bits = u128::from_str_radix(&id[4..], 16).unwrap();
            for (bit, (one, zero)) in seen_one.iter_mut().zip(seen_zero.iter_mut()).enumerate() {
                if bits >> bit & 1 == 1 {
                    *one = true;
                } else {
                    *zero = true;
                }
            }
        }
        assert!(seen_one.iter().chain(seen_zero.iter()).all(|seen| *seen));
        for id in ordered.iter().take(200) {
            assert!(id.starts_with("run_") && id.len() == 36, "{id}");
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
