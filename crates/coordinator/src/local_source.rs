//! [`LocalSource`]: runs queued in this process's memory. A queued run costs an id and
//! a blueprint handle (its parameters stay in the store's row); a worker moves it
//! `pending → running` with the store's conditional update (a run cancelled while
//! queued is skipped) and ends it in the store. A run queued again once the approvals
//! it waited for were decided (`resumed`) starts from what it used before.

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use oxydra_types::RunId;
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::approval_row::DecidedApproval;
use crate::blueprint::Blueprint;
use crate::error::CoordinatorError;
use crate::run::RunStatus;
use crate::run_ledger::RunLedger;
use crate::run_source::{RunEnd, RunSignals, RunSource, TakenRun};
use crate::run_usage::RunUsage;
use crate::store::RunStore;

/// A stored, pending run waiting for a worker.
pub(crate) struct Queued {
    pub(crate) run_id: RunId,
    pub(crate) blueprint: Arc<Blueprint>,
    /// Queued again after waiting for approval: it continues from what it stored.
    pub(crate) resumed: bool,
}

/// The receiving end of the queue, shared by the workers of a pool.
pub(crate) type Receiver = Arc<Mutex<mpsc::UnboundedReceiver<Queued>>>;

/// One worker's view of this process's queue and the store its runs are in.
pub(crate) struct LocalSource {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) receiver: Receiver,
}

#[async_trait]
impl RunSource for LocalSource {
    type Ticket = ();

    async fn next(&self, shutdown: &CancellationToken) -> Option<TakenRun<()>> {
        let mut receiver = tokio::select! {
            biased;
            () = shutdown.cancelled() => return None,
            receiver = self.receiver.lock() => receiver,
        };
        let next = tokio::select! {
            biased;
            () = shutdown.cancelled() => return None,
            next = receiver.recv() => next,
        };
        let queued = next?;
        // A run of this process's queue is never taken over: it starts afresh, unless it
        // waited for approval, when its budgets go on from what it used.
        let used = if queued.resumed {
            match self.store.get_run(queued.run_id.as_str()).await {
                Ok(Some(run)) => run.usage,
                Ok(None) => RunUsage::default(),
                Err(error) => {
                    tracing::warn!(%error, run_id = %queued.run_id, "could not read what the run used");
                    RunUsage::default()
                }
            }
        } else {
            RunUsage::default()
        };
        Some(TakenRun {
            agent_name: queued.blueprint.name().to_owned(),
            run_id: queued.run_id,
            blueprint: Ok(queued.blueprint),
            resumed: queued.resumed,
            cancel_requested: false,
            used,
            ticket: (),
        })
    }

    async fn start(&self, run: &TakenRun<()>) -> Result<Option<Value>, CoordinatorError> {
        self.store.start_run(run.run_id.as_str()).await
    }

    fn hold(&self, _run: &TakenRun<()>, _signals: RunSignals) -> Option<BoxFuture<'static, ()>> {
        // Nothing to renew: the run is this process's until it ends.
        None
    }

    fn ledger(&self, run: &TakenRun<()>) -> RunLedger {
        RunLedger::new(Arc::clone(&self.store), run.run_id.as_str())
    }

    async fn take_decisions(
        &self,
        run: &TakenRun<()>,
    ) -> Result<Vec<DecidedApproval>, CoordinatorError> {
        self.store.take_decisions(run.run_id.as_str()).await
    }

    async fn end(&self, run: TakenRun<()>, end: RunEnd) {
        let RunEnd {
            status,
            result,
            error,
            pending,
            ..
        } = end;
        if status == RunStatus::WaitingApproval {
            match self.store.suspend_run(run.run_id.as_str(), pending).await {
                Ok(true) => tracing::info!("run waits for approval"),
                Ok(false) => tracing::debug!("run was no longer running"),
                Err(error) => {
                    // Nothing else would end it in this process: fail it, saying why.
                    tracing::error!(%error, "could not store the run's approvals");
                    let failure = crate::run::RunError::new(
                        "internal",
                        format!("the run's approval requests could not be stored: {error}"),
                    );
                    if let Err(error) = self
                        .store
                        .finish_run(run.run_id.as_str(), RunStatus::Failed, None, Some(failure))
                        .await
                    {
                        tracing::error!(%error, "could not store the end of the run");
                    }
                }
            }
            return;
        }
        match self
            .store
            .finish_run(run.run_id.as_str(), status, result, error)
            .await
        {
            Ok(true) => tracing::info!(status = %status, "run ended"),
            Ok(false) => tracing::debug!("run had already ended"),
            Err(error) => tracing::error!(%error, "could not store the end of the run"),
        }
    }
}
