//! [`ClaimSource`]: runs claimed from a [`SharedRunQueue`]. Each worker claims one run
//! at a time from the store, renews its claim while the run executes (a cancel asked
//! for on any process is seen at the next renewal), and ends the run through its
//! claim. A worker whose claim was lost stops without ending the run (its new holder
//! does); a worker stopped by the coordinator's shutdown gives its claim up so that
//! another process continues the run. A run taken over keeps what its earlier holders
//! used of its budgets: the claim returns it and the worker starts from there.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use oxydra_types::RunId;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::approval_row::DecidedApproval;
use crate::blueprint::Blueprint;
use crate::claims::{ClaimState, ClaimedRun, SharedRunQueue};
use crate::error::CoordinatorError;
use crate::run::{RunError, RunStatus};
use crate::run_ledger::RunLedger;
use crate::run_source::{RunEnd, RunSignals, RunSource, TakenRun};
use crate::store::RunStore;

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

/// One worker's view of the shared queue.
pub(crate) struct ClaimSource {
    pub(crate) settings: SharedSettings,
    /// The store the queue is in, where the runs' usage is recorded.
    pub(crate) store: Arc<dyn RunStore>,
    /// Unique to this worker: the holder its claims are recorded under.
    pub(crate) holder: String,
}

#[async_trait]
impl RunSource for ClaimSource {
    /// The stored (scrubbed) parameters the claim returned.
    type Ticket = Value;

    async fn next(&self, shutdown: &CancellationToken) -> Option<TakenRun<Value>> {
        let queue = &self.settings.queue;
        while !shutdown.is_cancelled() {
            match queue.claim_next(&self.holder, self.settings.ttl).await {
                Ok(Some(claimed)) => return Some(self.taken(claimed)),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "could not claim a run"),
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                () = self.settings.wake.notified() => {}
                () = queue.wait_for_work(IDLE_POLL) => {}
            }
        }
        None
    }

    async fn start(&self, run: &TakenRun<Value>) -> Result<Option<Value>, CoordinatorError> {
        // Claiming moved it to running already.
        Ok(Some(run.ticket.clone()))
    }

    fn hold(&self, run: &TakenRun<Value>, signals: RunSignals) -> Option<BoxFuture<'static, ()>> {
        Some(
            renew(
                Arc::clone(&self.settings.queue),
                run.run_id.as_str().to_owned(),
                self.holder.clone(),
                self.settings.ttl,
                signals,
            )
            .boxed(),
        )
    }

    fn ledger(&self, run: &TakenRun<Value>) -> RunLedger {
        RunLedger::new(Arc::clone(&self.store), run.run_id.as_str())
    }

    async fn take_decisions(
        &self,
        run: &TakenRun<Value>,
    ) -> Result<Vec<DecidedApproval>, CoordinatorError> {
        self.store.take_decisions(run.run_id.as_str()).await
    }

    async fn end(&self, run: TakenRun<Value>, end: RunEnd) {
        let queue = &self.settings.queue;
        let run_id = run.run_id.as_str();
        if end.lost {
            tracing::warn!("the claim on the run was lost; its new holder ends it");
        } else if end.status == RunStatus::WaitingApproval {
            // The claim goes with the suspension: a waiting run is only rows, which
            // any worker of any process picks up once it is decided.
            match self.store.suspend_run(run_id, end.pending).await {
                Ok(true) => tracing::info!("run waits for approval"),
                Ok(false) => tracing::debug!("run was no longer running"),
                Err(error) => tracing::error!(%error, "could not store the run's approvals"),
            }
        } else if end.by_shutdown {
            // Stopped by shutdown: another process continues the run.
            match queue.release_claim(run_id, &self.holder).await {
                Ok(()) => tracing::info!("claim released for another worker to continue"),
                Err(error) => tracing::error!(%error, "could not release the claim"),
            }
        } else {
            match queue
                .finish_claimed(run_id, &self.holder, end.status, end.result, end.error)
                .await
            {
                Ok(true) => tracing::info!(status = %end.status, "run ended"),
                Ok(false) => tracing::debug!("run had already ended or changed hands"),
                Err(error) => tracing::error!(%error, "could not store the end of the run"),
            }
        }
    }
}

impl ClaimSource {
    /// `claimed` as a taken run, its blueprint looked up among this worker's.
    fn taken(&self, claimed: ClaimedRun) -> TakenRun<Value> {
        let blueprint = self
            .settings
            .blueprints
            .get(&claimed.agent_name)
            .cloned()
            .ok_or_else(|| {
                RunError::new(
                    "config",
                    format!(
                        "no agent named `{}` is configured on this worker",
                        claimed.agent_name
                    ),
                )
            });
        TakenRun {
            run_id: RunId::from(claimed.run_id.as_str()),
            agent_name: claimed.agent_name,
            blueprint,
            resumed: claimed.resumed,
            cancel_requested: claimed.cancel_requested,
            used: claimed.used,
            ticket: claimed.parameters,
        }
    }
}

/// Renews the claim every third of `ttl` (at least once a second, so that a cancel
/// asked for on another process is seen within a second) until `signals.stop`; cancels
/// the run when a cancel was asked for (`by_user`) or the claim was lost (`lost`).
async fn renew(
    queue: Arc<dyn SharedRunQueue>,
    run_id: String,
    holder: String,
    ttl: Duration,
    signals: RunSignals,
) {
    let period = (ttl / 3).clamp(Duration::from_millis(10), MAX_RENEW_PERIOD);
    loop {
        tokio::select! {
            biased;
            () = signals.stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        match queue.renew_claim(&run_id, &holder, ttl).await {
            Ok(ClaimState::Held) => {}
            Ok(ClaimState::CancelRequested) => {
                if !signals.cancel.is_cancelled() {
                    tracing::info!("cancel requested on another worker");
                    signals.by_user.store(true, Ordering::SeqCst);
                    signals.cancel.cancel();
                }
            }
            Ok(ClaimState::Lost) => {
                signals.lost.store(true, Ordering::SeqCst);
                signals.cancel.cancel();
                return;
            }
            Err(error) => tracing::warn!(%error, "could not renew the claim on the run"),
        }
    }
}
