//! What a run changed in the workspace, and taking it back (`GET /runs/{id}/changes`,
//! `POST /runs/{id}/revert`): the checkpoints of the run's session (DESIGN.md §3.14),
//! which AI agent runs record when the coordinator is given a checkpoint store
//! ([`RunnerDeps::checkpoints`](crate::RunnerDeps::checkpoints)).
//!
//! A revert takes the files back to the state before a turn (the first by default:
//! everything the run changed), keeping the run's conversation and record. It is
//! refused while the run has not ended, and — unless forced — when a path the run
//! changed was changed since by someone else (the paths and a diff are answered). It
//! is stored as a checkpoint of its own, so it can be undone in turn (`oxydra undo
//! --session`). Deterministic runs record no checkpoints: they have no changes to
//! list or revert.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_memory::CheckpointStore;
use oxydra_runtime::{Checkpoints, CheckpointsError, TurnChanges};
use oxydra_tools::checkpoint::{CheckpointConfig, CheckpointError};
use oxydra_types::{EntryState, NotCaptured, RunId};
use serde::{Deserialize, Serialize};

use crate::approval_preview::shown;
use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;
use crate::run::session_for;

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

impl Coordinator {
    /// The checkpoints runs record, or [`CoordinatorError::ChangesNotRecorded`].
    fn checkpoints(&self) -> Result<&Checkpoints, CoordinatorError> {
        self.inner
            .view
            .get()
            .and_then(|view| view.checkpoints.as_ref())
            .ok_or(CoordinatorError::ChangesNotRecorded)
    }

    /// What run `run_id` changed in the workspace, per turn (see [`RunChanges`]);
    /// paths and diffs are scrubbed, every character that could hide or restyle text
    /// (a control character but newline and tab, a bidi or zero-width mark) written
    /// as `\u{…}`, as approvals show them. A run that changed nothing (or a deterministic one)
    /// has no turns.
    ///
    /// # Errors
    /// [`CoordinatorError::RunNotFound`], [`CoordinatorError::ChangesNotRecorded`],
    /// or the store's failure.
    pub async fn run_changes(&self, run_id: &str) -> Result<RunChanges, CoordinatorError> {
        let run = self.get_run(run_id).await?;
        let checkpoints = self.checkpoints()?;
        let session = session_for(&RunId::from(run.run_id.as_str()));
        let mut turns = checkpoints
            .changes(&session)
            .await
            .map_err(|error| failed(run_id, "listing a run's changes", error))?;
        // Paths and diffs are the workspace's (a model may have named a file or
        // written its content): scrubbed, and nothing in them can hide or restyle text.
        for turn in &mut turns {
            for path in &mut turn.paths {
                path.path = shown(&path.path);
                if let Some(diff) = path.diff.as_mut() {
                    *diff = shown(diff);
                }
            }
            for missing in &mut turn.not_captured {
                missing.path = shown(&missing.path);
            }
        }
        Ok(RunChanges {
            run_id: run.run_id,
            session_id: session.to_string(),
            turns,
        })
    }

    /// Takes the files run `run_id` changed back to the state before turn
    /// `request.to_turn` (default: before the run), keeping its conversation; stored as
    /// a checkpoint of its own, so it can be undone in turn.
    ///
    /// # Errors
    /// [`CoordinatorError::RunNotFound`]; [`CoordinatorError::RunActive`] until the
    /// run has ended; [`CoordinatorError::TurnNotFound`];
    /// [`CoordinatorError::RevertConflicts`] (nothing changed) when a path was changed
    /// since by someone else and the request does not force;
    /// [`CoordinatorError::RevertPartial`]; [`CoordinatorError::SessionBusy`];
    /// [`CoordinatorError::WorkspaceMismatch`] when the run's changes were recorded in
    /// another workspace than this coordinator's;
    /// [`CoordinatorError::ChangesNotRecorded`]; or the store's failure.
    pub async fn revert_run(
        &self,
        run_id: &str,
        request: RevertRequest,
    ) -> Result<RunReverted, CoordinatorError> {
        let run = self.get_run(run_id).await?;
        if !run.status.is_terminal() {
            return Err(CoordinatorError::RunActive {
                run_id: run.run_id,
                status: run.status,
            });
        }
        let checkpoints = self.checkpoints()?;
        let session = session_for(&RunId::from(run.run_id.as_str()));
        let nothing = RunReverted {
            run_id: run.run_id.clone(),
            forced: request.force,
            ..RunReverted::default()
        };
        let recorded = checkpoints
            .list(&session)
            .await
            .map_err(|error| failed(run_id, "listing a run's changes", error))?;
        // A run without a checkpoint (one that changed nothing, a deterministic one,
        // one without a conversation) has nothing to revert.
        if request.to_turn.is_none() && recorded.is_empty() {
            return Ok(nothing);
        }
        // Files are put back only in the workspace this server works in: a run
        // recorded by a worker of another workspace (a shared database) is not.
        let served = self
            .inner
            .view
            .get()
            .and_then(|view| view.workspace_root.clone());
        if let Some(served) = served {
            let workspaces = recorded
                .iter()
                .map(|stored| stored.checkpoint.workspace.clone())
                .collect();
            if let Some(foreign) = foreign_workspace(workspaces, served.clone()).await {
                return Err(CoordinatorError::WorkspaceMismatch {
                    run_id: run.run_id,
                    recorded: foreign,
                    served: served.display().to_string(),
                });
            }
        }
        let reverted = checkpoints
            .revert_files(&session, request.to_turn.unwrap_or(1), request.force)
            .await
            .map_err(|error| failed(run_id, "reverting a run's changes", error))?;
        Ok(RunReverted {
            turns: reverted.turns,
            restored: reverted.paths.iter().map(|path| shown(path)).collect(),
            not_captured: reverted
                .not_captured
                .into_iter()
                .map(|missing| NotCaptured {
                    path: shown(&missing.path),
                    ..missing
                })
                .collect(),
            irreversible: reverted.irreversible,
            ..nothing
        })
    }
}

/// The first of `workspaces` (as checkpoints record them) that is not `served`, both
/// resolved (symlinks, `..`); a workspace that does not exist here is another.
async fn foreign_workspace(workspaces: Vec<String>, served: PathBuf) -> Option<String> {
    tokio::task::spawn_blocking(move || {
        let served = served.canonicalize().unwrap_or(served);
        workspaces.into_iter().find(|recorded| {
            std::path::Path::new(recorded)
                .canonicalize()
                .map_or(true, |resolved| resolved != served)
        })
    })
    .await
    .unwrap_or(None)
}

/// A checkpoint failure as the coordinator's error for run `run_id`.
fn failed(run_id: &str, action: &'static str, error: CheckpointsError) -> CoordinatorError {
    let run_id = run_id.to_owned();
    match error {
        CheckpointsError::NoTurn { turn, turns, .. } => CoordinatorError::TurnNotFound {
            run_id,
            turn,
            turns,
        },
        CheckpointsError::Busy(error) => CoordinatorError::SessionBusy {
            run_id,
            message: error.to_string(),
        },
        CheckpointsError::Restore(CheckpointError::Conflicts(conflicts)) => {
            CoordinatorError::RevertConflicts {
                run_id,
                conflicts: conflicts
                    .into_iter()
                    .map(|conflict| RevertConflict {
                        diff: shown(&conflict.diff),
                        path: shown(&conflict.path),
                        expected: conflict.expected,
                        found: conflict.found,
                    })
                    .collect(),
            }
        }
        CheckpointsError::Restore(CheckpointError::Partial {
            restored, failed, ..
        }) => CoordinatorError::RevertPartial {
            run_id,
            restored: restored.iter().map(|path| shown(path)).collect(),
            failed: failed
                .into_iter()
                .map(|not| NotReverted {
                    path: shown(&not.path),
                    error: shown(&not.error),
                })
                .collect(),
        },
        other => CoordinatorError::Storage {
            backend: "memory",
            action,
            message: other.to_string(),
        },
    }
}
