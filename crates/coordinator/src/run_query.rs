//! What a person asks the run store for: a page of runs ([`RunQuery`], newest first,
//! continued with a [`RunCursor`]) and the approvals that wait across runs
//! ([`WaitingApproval`], oldest first).

use std::fmt;

use oxydra_runtime::PendingApproval;
use serde::{Deserialize, Serialize};

use crate::run::RunStatus;

/// The largest page of [`RunQuery::limit`].
pub const MAX_RUN_PAGE: u32 = 500;

/// The page size when none is asked for.
pub const DEFAULT_RUN_PAGE: u32 = 50;

/// The most waiting approvals [`RunStore::waiting_approvals`](crate::RunStore::waiting_approvals)
/// returns at once.
pub const MAX_WAITING_APPROVALS: u32 = 1000;

/// Where a page of runs continues: after the run created at `created_at` with id
/// `run_id` (pages are ordered by `created_at`, then id, both descending). On the wire
/// `"<created_at>.<run_id>"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCursor {
    /// The `created_at` of the last run of the previous page.
    pub created_at: i64,
    /// Its id.
    pub run_id: String,
}

impl RunCursor {
    /// The cursor after `created_at` / `run_id`.
    pub fn after(created_at: i64, run_id: impl Into<String>) -> Self {
        Self {
            created_at,
            run_id: run_id.into(),
        }
    }

    /// Reads the wire form `"<created_at>.<run_id>"`; `None` when it is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let (created_at, run_id) = text.split_once('.')?;
        let created_at = created_at.parse().ok()?;
        let valid_id = !run_id.is_empty()
            && run_id.len() <= 128
            && run_id
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
        valid_id.then(|| Self::after(created_at, run_id))
    }
}

impl fmt::Display for RunCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.created_at, self.run_id)
    }
}

/// Which runs [`RunStore::list_runs`](crate::RunStore::list_runs) returns: those
/// matching every filter given, newest first (`created_at`, then id, descending), at
/// most `limit`, after `after` when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs with this status.
    pub status: Option<RunStatus>,
    /// Only runs of this blueprint.
    pub agent: Option<String>,
    /// Only runs created at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Only runs after this cursor (the next page).
    pub after: Option<RunCursor>,
    /// At most this many runs (1 to [`MAX_RUN_PAGE`]; a backend clamps it).
    pub limit: u32,
}

impl Default for RunQuery {
    fn default() -> Self {
        Self {
            status: None,
            agent: None,
            since: None,
            after: None,
            limit: DEFAULT_RUN_PAGE,
        }
    }
}

impl RunQuery {
    /// The limit a backend applies: `limit` within 1 to [`MAX_RUN_PAGE`].
    pub fn clamped_limit(&self) -> u32 {
        self.limit.clamp(1, MAX_RUN_PAGE)
    }
}

/// One approval that waits for a person, with the run it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WaitingApproval {
    /// The run that waits.
    pub run_id: String,
    /// The run's blueprint.
    pub agent_name: String,
    /// The request.
    #[serde(flatten)]
    #[schema(value_type = crate::api_schemas::PendingApprovalDoc)]
    pub approval: PendingApproval,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_writes_and_refuses_anything_else() {
        let cursor = RunCursor::after(1_700_000_000_000, "run_00ff");
        assert_eq!(RunCursor::parse(&cursor.to_string()), Some(cursor));
        for bad in ["", "12", "x.run_1", "12.", "12.a b", "12.a'--", "-.run"] {
            assert_eq!(RunCursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_limit_is_clamped() {
        let query = |limit| RunQuery {
            limit,
            ..RunQuery::default()
        };
        assert_eq!(query(0).clamped_limit(), 1);
        assert_eq!(query(10_000).clamped_limit(), MAX_RUN_PAGE);
        assert_eq!(query(7).clamped_limit(), 7);
    }
}
