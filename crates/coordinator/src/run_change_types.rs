//! The types of a run's changes and their revert (`GET /runs/{id}/changes`, `POST
//! /runs/{id}/revert`; [`crate::run_changes`] lists and reverts): what is asked and
//! answered, apart from the coordinator so that its errors can name them.

use std::sync::Arc;

use oxydra_memory::CheckpointStore;
use oxydra_runtime::TurnChanges;
use oxydra_tools::checkpoint::CheckpointConfig;
use oxydra_types::{EntryState, NotCaptured};
use serde::{Deserialize, Serialize};

/// Where AI agent runs record their checkpoints, and how (`[checkpoints]`).
#[derive(Clone)]
pub struct RunCheckpoints {
    /// The store: the same database as the runs' sessions
    /// ([`RunnerDeps::memory`](crate::RunnerDeps::memory)).
    pub store: Arc<dyn CheckpointStore>,
    /// What is recorded and kept (`enabled = false`: runs record nothing, but the
    /// changes already recorded can still be listed and reverted).
    pub config: CheckpointConfig,
}

impl std::fmt::Debug for RunCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunCheckpoints")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What a run changed (`GET /runs/{id}/changes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunChanges {
    /// The run.
    pub run_id: String,
    /// Its session.
    pub session_id: String,
    /// Per turn that changed something, oldest first: the paths with their kind of
    /// change and a diff summary.
    #[schema(value_type = Vec<crate::api_schemas::TurnChangesDoc>)]
    pub turns: Vec<TurnChanges>,
}

/// The body of `POST /runs/{id}/revert` (optional: `{}` reverts everything the run
/// changed, refusing paths changed since by someone else).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertRequest {
    /// Take the files back to the state before this turn (from 1); default 1:
    /// everything the run changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_turn: Option<u64>,
    /// Overwrite paths changed since by someone else (default: refuse, `409`).
    #[serde(default)]
    pub force: bool,
}

/// What a revert did (`POST /runs/{id}/revert`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunReverted {
    /// The run.
    pub run_id: String,
    /// The turns whose changes were reverted, oldest first (empty: the run had
    /// nothing to revert).
    pub turns: Vec<u64>,
    /// The paths put back.
    pub restored: Vec<String>,
    /// Paths whose content before was not kept (over the size cap, or holding a
    /// secret): not put back.
    #[schema(value_type = Vec<crate::api_schemas::NotCapturedDoc>)]
    pub not_captured: Vec<NotCaptured>,
    /// Calls of the reverted turns whose effects cannot be reverted, as `turn N: tool`.
    pub irreversible: Vec<String>,
    /// Whether paths changed since were overwritten (the request's `force`).
    pub forced: bool,
}

/// A path the run changed that someone else changed since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevertConflict {
    /// The path, relative to the workspace root.
    pub path: String,
    /// What the run left there.
    #[schema(value_type = crate::api_schemas::EntryStateDoc)]
    pub expected: EntryState,
    /// What is there now.
    #[schema(value_type = crate::api_schemas::EntryStateDoc)]
    pub found: EntryState,
    /// A unified diff from the text there now to what the revert would write (empty
    /// for other than text files).
    pub diff: String,
}

/// A path a partial revert did not put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NotReverted {
    /// The path.
    pub path: String,
    /// Why, as text.
    pub error: String,
}
