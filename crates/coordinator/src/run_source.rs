//! [`RunSource`]: where a worker (`worker.rs`) takes its runs from and reports their
//! ends to — this process's own queue (`local_source.rs`) or the claims of a store
//! shared by several processes (`claim_source.rs`). The run lifecycle itself is the
//! worker's, written once; this module depends on neither side.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use async_trait::async_trait;
use futures::future::BoxFuture;
use oxydra_runtime::PendingApproval;
use oxydra_types::RunId;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval_row::DecidedApproval;
use crate::blueprint::Blueprint;
use crate::error::CoordinatorError;
use crate::run::{RunError, RunStatus};
use crate::run_ledger::RunLedger;
use crate::run_usage::RunUsage;

/// A run a worker took from its source, with what the source needs to start, hold and
/// end it (`ticket`).
pub(crate) struct TakenRun<T> {
    /// The run's id.
    pub(crate) run_id: RunId,
    /// The blueprint it names (for logs).
    pub(crate) agent_name: String,
    /// The blueprint to run, or why this worker cannot run it (the run then ends
    /// `failed` with that error, without starting).
    pub(crate) blueprint: Result<Arc<Blueprint>, RunError>,
    /// Whether it was started before (by a holder that died, or before it waited for
    /// approval): it continues from what it stored.
    pub(crate) resumed: bool,
    /// Whether a cancel was asked for before it was taken: it ends `cancelled`.
    pub(crate) cancel_requested: bool,
    /// What earlier holders used of its budgets (zero for a fresh run).
    pub(crate) used: RunUsage,
    /// The source's own handle on the run.
    pub(crate) ticket: T,
}

/// What the worker and the source's [`hold`](RunSource::hold) share while a run lives.
#[derive(Clone)]
pub(crate) struct RunSignals {
    /// Cancels the run (a child of the coordinator's shutdown token).
    pub(crate) cancel: CancellationToken,
    /// Set when the cancel came from a user (the run ends `cancelled`, not
    /// `interrupted`).
    pub(crate) by_user: Arc<AtomicBool>,
    /// Set when the source no longer holds the run for this worker (its claim lapsed
    /// and another worker took it): the worker stops without ending it.
    pub(crate) lost: Arc<AtomicBool>,
    /// Fires when the run has finished executing: holding stops.
    pub(crate) stop: CancellationToken,
}

/// How a run ended, as the worker reports it to the source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunEnd {
    /// `completed`, `failed`, `cancelled`, or `waiting_approval` (with `pending`).
    pub(crate) status: RunStatus,
    /// What it produced (completed runs).
    pub(crate) result: Option<Value>,
    /// Why it failed or was cancelled.
    pub(crate) error: Option<RunError>,
    /// The requests it waits for (`waiting_approval` only).
    pub(crate) pending: Vec<PendingApproval>,
    /// The source lost the run to another worker: it must not end it.
    pub(crate) lost: bool,
    /// The coordinator's shutdown (not a user) cut the run short: a source shared by
    /// other processes may hand the run on instead of ending it.
    pub(crate) by_shutdown: bool,
}

/// Where a worker takes runs from and reports their ends to (see the module docs).
#[async_trait]
pub(crate) trait RunSource: Send + Sync + 'static {
    /// The source's own handle on a taken run.
    type Ticket: Send + Sync + 'static;

    /// Waits for the next run; `None` once `shutdown` fires (or the source is closed).
    async fn next(&self, shutdown: &CancellationToken) -> Option<TakenRun<Self::Ticket>>;

    /// Moves the run to running: its parameters, or `None` when it may no longer start
    /// (cancelled while queued, or ended elsewhere).
    async fn start(&self, run: &TakenRun<Self::Ticket>) -> Result<Option<Value>, CoordinatorError>;

    /// Work that keeps the run held while it executes (a claim renewed until
    /// `signals.stop` fires, setting `signals.lost` or cancelling the run as it finds);
    /// `None` when the source has nothing to keep.
    fn hold(
        &self,
        run: &TakenRun<Self::Ticket>,
        signals: RunSignals,
    ) -> Option<BoxFuture<'static, ()>>;

    /// Where the run's executor records what the run used as it goes.
    fn ledger(&self, run: &TakenRun<Self::Ticket>) -> RunLedger;

    /// The decisions on the approvals the run waited for, not handed out before
    /// (empty for a run that did not wait): called once the run started, so each
    /// decision reaches one execution only.
    async fn take_decisions(
        &self,
        run: &TakenRun<Self::Ticket>,
    ) -> Result<Vec<DecidedApproval>, CoordinatorError>;

    /// Records the end of the run (for `waiting_approval`: suspends it with its
    /// requests, freeing the worker).
    async fn end(&self, run: TakenRun<Self::Ticket>, end: RunEnd);
}
