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

use oxydra_runtime::{Checkpoints, CheckpointsError};
use oxydra_tools::checkpoint::CheckpointError;
use oxydra_types::{NotCaptured, RunId};

use crate::approval_preview::shown;
use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;
use crate::run::session_for;

pub use crate::run_change_types::{
    NotReverted, RevertConflict, RevertRequest, RunChanges, RunCheckpoints, RunReverted,
};

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
