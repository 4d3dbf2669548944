//! The worker pool: runs wait `pending` until one of `max_concurrent_runs` permits is
//! free, then execute under their own cancellation token (a child of the
//! coordinator's shutdown token), and end `completed`, `failed` or `cancelled`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::run::{RunError, RunStatus};
use crate::runners::{RunExecutor, RunRequest};
use crate::store::RunStore;

/// How long a cancelled executor may take to wind down before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

struct ActiveRun {
    cancel: CancellationToken,
    by_user: Arc<AtomicBool>,
    done: watch::Receiver<bool>,
}

/// What [`RunQueue::cancel`] found.
pub(crate) enum CancelOutcome {
    /// The run was active; cancellation was requested and awaited (up to the wait).
    Requested,
    /// The run is not active in this coordinator.
    NotActive,
}

pub(crate) struct RunQueue {
    store: RunStore,
    executor: Arc<dyn RunExecutor>,
    permits: Arc<Semaphore>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    active: Arc<Mutex<HashMap<String, ActiveRun>>>,
}

impl RunQueue {
    pub(crate) fn new(
        store: RunStore,
        executor: Arc<dyn RunExecutor>,
        max_concurrent: usize,
    ) -> Self {
        Self {
            store,
            executor,
            permits: Arc::new(Semaphore::new(max_concurrent)),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            active: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Starts a worker task for a stored, pending run.
    pub(crate) fn enqueue(
        &self,
        request_without_token: impl FnOnce(CancellationToken) -> RunRequest,
    ) {
        let cancel = self.shutdown.child_token();
        let request = request_without_token(cancel.clone());
        let run_id = request.run_id.as_str().to_owned();
        let by_user = Arc::new(AtomicBool::new(false));
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
        let worker = Worker {
            store: self.store.clone(),
            executor: Arc::clone(&self.executor),
            permits: Arc::clone(&self.permits),
            active: Arc::clone(&self.active),
        };
        let span = tracing::info_span!("coordinator_run", run_id = %run_id,
            agent_name = %request.blueprint.name());
        self.tracker.spawn(
            async move {
                worker.run(request, by_user).await;
                let _ = done_tx.send(true);
            }
            .instrument(span),
        );
    }

    /// Cancels an active run and waits up to `wait` for it to end.
    pub(crate) async fn cancel(&self, run_id: &str, wait: Duration) -> CancelOutcome {
        let done = match self.active.lock() {
            Ok(active) => active.get(run_id).map(|run| {
                run.by_user.store(true, Ordering::SeqCst);
                run.cancel.cancel();
                run.done.clone()
            }),
            Err(_) => None,
        };
        match done {
            Some(done) => {
                let _ = wait_done(done, wait).await;
                CancelOutcome::Requested
            }
            None => CancelOutcome::NotActive,
        }
    }

    /// Waits up to `wait` for an active run to end; `false` if it is still going.
    pub(crate) async fn wait(&self, run_id: &str, wait: Duration) -> bool {
        let done = match self.active.lock() {
            Ok(active) => active.get(run_id).map(|run| run.done.clone()),
            Err(_) => None,
        };
        match done {
            Some(done) => wait_done(done, wait).await,
            None => true,
        }
    }

    /// Stops taking runs, cancels the active ones (they end `failed` / `interrupted`)
    /// and waits for their workers.
    pub(crate) async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

async fn wait_done(mut done: watch::Receiver<bool>, wait: Duration) -> bool {
    tokio::time::timeout(wait, done.wait_for(|finished| *finished))
        .await
        .is_ok_and(|result| result.is_ok())
}

struct Worker {
    store: RunStore,
    executor: Arc<dyn RunExecutor>,
    permits: Arc<Semaphore>,
    active: Arc<Mutex<HashMap<String, ActiveRun>>>,
}

impl Worker {
    async fn run(self, request: RunRequest, by_user: Arc<AtomicBool>) {
        let run_id = request.run_id.as_str().to_owned();
        let cancel = request.cancel.clone();
        let outcome = self.execute(request).await;
        let (status, result, error) = match outcome {
            Some(Ok(value)) => (RunStatus::Completed, Some(value), None),
            Some(Err(_)) | None if cancel.is_cancelled() => {
                if by_user.load(Ordering::SeqCst) {
                    (RunStatus::Cancelled, None, Some(RunError::cancelled()))
                } else {
                    (RunStatus::Failed, None, Some(RunError::interrupted()))
                }
            }
            Some(Err(error)) => (RunStatus::Failed, None, Some(error)),
            None => (RunStatus::Failed, None, Some(RunError::interrupted())),
        };
        match self.store.finish_run(&run_id, status, result, error).await {
            Ok(true) => tracing::info!(status = %status, "run ended"),
            Ok(false) => tracing::debug!("run had already ended"),
            Err(error) => tracing::error!(%error, "could not store the end of the run"),
        }
        if let Ok(mut active) = self.active.lock() {
            active.remove(&run_id);
        }
    }

    /// `None` when the run never started (cancelled while pending, or already ended).
    async fn execute(&self, request: RunRequest) -> Option<Result<Value, RunError>> {
        let cancel = request.cancel.clone();
        let _permit = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            permit = Arc::clone(&self.permits).acquire_owned() => permit.ok()?,
        };
        match self.store.mark_running(request.run_id.as_str()).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(error) => {
                tracing::error!(%error, "could not mark the run running");
                return Some(Err(RunError::new("internal", error.to_string())));
            }
        }
        tracing::info!("run started");
        let execution = self.executor.execute(request);
        tokio::pin!(execution);
        let outcome = tokio::select! {
            outcome = &mut execution => outcome,
            () = cancel.cancelled() => {
                match tokio::time::timeout(CANCEL_GRACE, &mut execution).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(RunError::cancelled()),
                }
            }
        };
        Some(outcome)
    }
}
