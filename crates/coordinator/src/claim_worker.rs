//! Workers of a [`SharedRunQueue`]: each claims one run at a time from the store,
//! renews its claim while the run executes (a cancel asked for on any process is seen
//! at the next renewal), and ends the run through its claim. A worker whose claim was
//! lost stops without ending the run (its new holder does); a worker stopped by the
//! coordinator's shutdown gives its claim up so that another process continues the run.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oxydra_types::RunId;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::blueprint::Blueprint;
use crate::claims::{ClaimState, ClaimedRun, SharedRunQueue};
use crate::queue::{ActiveRun, ActiveRuns, CANCEL_GRACE};
use crate::run::{RunError, RunStatus};
use crate::runners::{RunExecutor, RunRequest};

/// How long an idle worker waits before looking for work again when no notification
/// comes (another process's new run, or a lapsed claim to take over).
const IDLE_POLL: Duration = Duration::from_millis(500);

/// The longest pause between two renewals of a claim: also how long a cancel asked for
/// on another process may take to reach the run.
const MAX_RENEW_PERIOD: Duration = Duration::from_secs(1);

/// What the workers of a shared queue share.
#[derive(Clone)]
pub(crate) struct SharedSettings {
    /// The store's queue.
    pub(crate) queue: Arc<dyn SharedRunQueue>,
    /// The loaded blueprints by name.
    pub(crate) blueprints: HashMap<String, Arc<Blueprint>>,
    /// How long a claim lasts unless renewed.
    pub(crate) ttl: Duration,
    /// Wakes idle workers of this process when it stored a new run.
    pub(crate) wake: Arc<Notify>,
}

pub(crate) struct ClaimWorker {
    pub(crate) settings: SharedSettings,
    pub(crate) executor: Arc<dyn RunExecutor>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) active: ActiveRuns,
    pub(crate) changes: Arc<watch::Sender<u64>>,
    /// Unique to this worker: the holder its claims are recorded under.
    pub(crate) holder: String,
}

impl ClaimWorker {
    /// Claims and runs one run at a time until shutdown.
    pub(crate) async fn serve(self) {
        let queue = Arc::clone(&self.settings.queue);
        while !self.shutdown.is_cancelled() {
            match queue.claim_next(&self.holder, self.settings.ttl).await {
                Ok(Some(claimed)) => {
                    let span = tracing::info_span!("coordinator_run", run_id = %claimed.run_id,
                        agent_name = %claimed.agent_name, resumed = claimed.resumed);
                    self.run(claimed).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "could not claim a run"),
            }
            tokio::select! {
                biased;
                () = self.shutdown.cancelled() => break,
                () = self.settings.wake.notified() => {}
                () = queue.wait_for_work(IDLE_POLL) => {}
            }
        }
    }

    fn changed(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    async fn run(&self, claimed: ClaimedRun) {
        let queue = &self.settings.queue;
        let run_id = claimed.run_id.clone();
        let Some(blueprint) = self.settings.blueprints.get(&claimed.agent_name).cloned() else {
            let error = RunError::new(
                "config",
                format!(
                    "no agent named `{}` is configured on this worker",
                    claimed.agent_name
                ),
            );
            let _ = queue
                .finish_claimed(&run_id, &self.holder, RunStatus::Failed, None, Some(error))
                .await;
            self.changed();
            return;
        };
        let cancel = self.shutdown.child_token();
        let by_user = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicBool::new(false));
        let (done_tx, done_rx) = watch::channel(false);
        if let Ok(mut active) = self.active.lock() {
            active.insert(
                run_id.clone(),
                ActiveRun {
                    cancel: cancel.clone(),
                    by_user: Arc::clone(&by_user),
                    done: done_rx,
                },
            );
        }
        self.changed();
        if claimed.cancel_requested {
            by_user.store(true, Ordering::SeqCst);
            cancel.cancel();
        }
        tracing::info!("run claimed");
        let stop_renewing = CancellationToken::new();
        let renewer = tokio::spawn(
            renew(
                Arc::clone(queue),
                run_id.clone(),
                self.holder.clone(),
                self.settings.ttl,
                cancel.clone(),
                Arc::clone(&by_user),
                Arc::clone(&lost),
                stop_renewing.clone(),
            )
            .in_current_span(),
        );
        let request = RunRequest {
            run_id: RunId::from(run_id.as_str()),
            blueprint,
            parameters: claimed.parameters,
            resumed: claimed.resumed,
            cancel: cancel.clone(),
        };
        let outcome = if cancel.is_cancelled() {
            Err(RunError::cancelled())
        } else {
            execute(self.executor.as_ref(), request, &cancel).await
        };
        stop_renewing.cancel();
        let _ = renewer.await;
        let (status, result, error) = match outcome {
            Ok(value) => (RunStatus::Completed, Some(value), None),
            Err(_) if cancel.is_cancelled() && by_user.load(Ordering::SeqCst) => {
                (RunStatus::Cancelled, None, Some(RunError::cancelled()))
            }
            Err(_) if cancel.is_cancelled() => {
                (RunStatus::Failed, None, Some(RunError::interrupted()))
            }
            Err(error) => (RunStatus::Failed, None, Some(error)),
        };
        if lost.load(Ordering::SeqCst) {
            tracing::warn!("the claim on the run was lost; its new holder ends it");
        } else if status == RunStatus::Failed
            && self.shutdown.is_cancelled()
            && !by_user.load(Ordering::SeqCst)
        {
            // Stopped by shutdown: another process continues the run.
            match queue.release_claim(&run_id, &self.holder).await {
                Ok(()) => tracing::info!("claim released for another worker to continue"),
                Err(error) => tracing::error!(%error, "could not release the claim"),
            }
        } else {
            match queue
                .finish_claimed(&run_id, &self.holder, status, result, error)
                .await
            {
                Ok(true) => tracing::info!(status = %status, "run ended"),
                Ok(false) => tracing::debug!("run had already ended or changed hands"),
                Err(error) => tracing::error!(%error, "could not store the end of the run"),
            }
        }
        if let Ok(mut active) = self.active.lock() {
            active.remove(&run_id);
        }
        let _ = done_tx.send(true);
        self.changed();
    }
}

/// Runs `request`, giving it [`CANCEL_GRACE`] to wind down once `cancel` fires.
async fn execute(
    executor: &dyn RunExecutor,
    request: RunRequest,
    cancel: &CancellationToken,
) -> Result<Value, RunError> {
    let execution = executor.execute(request);
    tokio::pin!(execution);
    tokio::select! {
        outcome = &mut execution => outcome,
        () = cancel.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut execution).await {
                Ok(outcome) => outcome,
                Err(_) => Err(RunError::cancelled()),
            }
        }
    }
}

/// Renews the claim every third of `ttl` (at least once a second, so that a cancel
/// asked for on another process is seen within a second) until `stop`; cancels the run
/// when a cancel was asked for (`by_user`) or the claim was lost (`lost`).
#[allow(clippy::too_many_arguments)]
async fn renew(
    queue: Arc<dyn SharedRunQueue>,
    run_id: String,
    holder: String,
    ttl: Duration,
    cancel: CancellationToken,
    by_user: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    let period = (ttl / 3).clamp(Duration::from_millis(10), MAX_RENEW_PERIOD);
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        match queue.renew_claim(&run_id, &holder, ttl).await {
            Ok(ClaimState::Held) => {}
            Ok(ClaimState::CancelRequested) => {
                if !cancel.is_cancelled() {
                    tracing::info!("cancel requested on another worker");
                    by_user.store(true, Ordering::SeqCst);
                    cancel.cancel();
                }
            }
            Ok(ClaimState::Lost) => {
                lost.store(true, Ordering::SeqCst);
                cancel.cancel();
                return;
            }
            Err(error) => tracing::warn!(%error, "could not renew the claim on the run"),
        }
    }
}
