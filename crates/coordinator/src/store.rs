//! [`RunStore`]: where the coordinator keeps its blueprints and runs.

use async_trait::async_trait;
use serde_json::Value;

use std::sync::Arc;

use oxydra_runtime::{ApprovalDecision, PendingApproval};

use crate::approval_row::{DecidedApproval, RecordedDecision};
use crate::blueprint::BlueprintSummary;
use crate::claims::SharedRunQueue;
use crate::error::CoordinatorError;
use crate::run::{Run, RunError, RunStatus, RunTreeUsage};
use crate::run_query::{RunQuery, WaitingApproval};
use crate::run_usage::RunUsage;

/// What [`RunStore::reserve_tree_run`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TreeReservation {
    /// Counted: the new run may be stored.
    Reserved,
    /// The tree has started `max_runs` runs already.
    TooManyRuns(RunTreeUsage),
    /// The tree has spent its root's `max_cost`.
    BudgetSpent(RunTreeUsage),
    /// No such root run.
    NoRoot,
}

/// Storage of blueprints and runs, used by the HTTP layer, the agent tools and the
/// worker pool. [`SqliteRunStore`](crate::SqliteRunStore) is the built-in backend; the
/// suites in `oxydra_coordinator::conformance` (feature `conformance`) check any other.
///
/// Contract every backend keeps:
/// - every state change is conditional on the current status, so a late worker can
///   never overwrite a run that was cancelled or recovered in the meantime: a run is
///   started (`pending` → `running`) once per time it is queued (a run that waited for
///   approval is queued again once decided) and ended at most once;
/// - a run `waiting_approval` is only rows: it can be decided, expired or cancelled
///   (`finish_run` / `request_cancel`), never recovered as interrupted;
/// - parameters, results and errors are scrubbed of secrets before they are stored
///   (with [`scrub_value`](crate::scrub_value) and [`scrub_error`](crate::scrub_error));
/// - every call is durable when it returns and never blocks an async worker;
/// - errors of the database are [`CoordinatorError::Storage`] naming the backend and the
///   action, undecodable rows [`CoordinatorError::CorruptRow`].
#[async_trait]
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// Replaces the stored blueprints with `blueprints` (in this order).
    async fn replace_blueprints(
        &self,
        blueprints: Vec<BlueprintSummary>,
    ) -> Result<(), CoordinatorError>;

    /// The stored blueprints, in the order last given.
    async fn list_blueprints(&self) -> Result<Vec<BlueprintSummary>, CoordinatorError>;

    /// Stores a new run, its parameters scrubbed first: the stored copy (and so what the
    /// run is started with) holds no secret.
    async fn insert_run(&self, run: Run) -> Result<(), CoordinatorError>;

    /// Claims a pending run for a worker: moves it to running and returns its stored
    /// parameters; `None` when it was no longer pending (cancelled while queued, or
    /// recovered) or does not exist.
    async fn start_run(&self, run_id: &str) -> Result<Option<Value>, CoordinatorError>;

    /// Ends a run that is still pending, running or waiting for approval with
    /// `status` (`completed`, `failed`, `cancelled`), `result` and `error` scrubbed
    /// first; `false` when it had already ended (or does not exist).
    async fn finish_run(
        &self,
        run_id: &str,
        status: RunStatus,
        result: Option<Value>,
        error: Option<RunError>,
    ) -> Result<bool, CoordinatorError>;

    /// Records what running run `run_id` has used so far (its totals over every worker
    /// that ran it: [`RunUsage`]), as its executor goes (before each provider call and
    /// after each answer). Each counter only grows — the larger of the stored and the
    /// given value is kept, in one statement — so a worker that lost the run late
    /// cannot lower what its successor recorded. `false` when the run is not running
    /// (or does not exist): nothing is stored.
    async fn record_usage(&self, run_id: &str, usage: RunUsage) -> Result<bool, CoordinatorError>;

    /// The run with `run_id`, if any.
    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, CoordinatorError>;

    /// The runs matching `query`'s filters, newest first (`created_at`, then id,
    /// descending), after `query.after` when given, at most
    /// [`RunQuery::clamped_limit`]. Listed runs carry no `pending_approvals` (see
    /// [`RunStore::waiting_approvals`]).
    async fn list_runs(&self, query: RunQuery) -> Result<Vec<Run>, CoordinatorError>;

    /// The undecided approvals of every run that is `waiting_approval`, oldest first
    /// (`requested_at`, then approval id), at most `limit`, each with its run's id and
    /// blueprint.
    async fn waiting_approvals(&self, limit: u32)
    -> Result<Vec<WaitingApproval>, CoordinatorError>;

    /// Counts one more run in the tree of root `root_run_id` (its `tree_runs`), when
    /// the tree has started fewer than `max_runs` and, with `max_cost`, its
    /// `tree_cost` is still below it; in one conditional statement, so concurrent
    /// starters never pass the cap together.
    async fn reserve_tree_run(
        &self,
        root_run_id: &str,
        max_runs: u32,
        max_cost: Option<f64>,
    ) -> Result<TreeReservation, CoordinatorError>;

    /// Adds `cost` (US dollars) to the `tree_cost` of root `root_run_id`.
    async fn charge_tree(&self, root_run_id: &str, cost: f64) -> Result<(), CoordinatorError>;

    /// Marks every run left pending or running (by a coordinator that stopped without
    /// finishing them) as failed with kind `interrupted`; returns how many. A run
    /// `waiting_approval` is left alone: no worker holds it, it waits for a person.
    async fn recover_interrupted(&self) -> Result<usize, CoordinatorError>;

    /// Moves running run `run_id` to `waiting_approval` and stores `pending`, its tool
    /// calls that wait for a person, undecided — in one transaction, so a run never
    /// waits without its requests, nor has requests while running. The worker's hold
    /// on the run (a claim of a shared queue) is dropped with it. `false` when the run
    /// is not running (or does not exist): nothing is stored.
    async fn suspend_run(
        &self,
        run_id: &str,
        pending: Vec<PendingApproval>,
    ) -> Result<bool, CoordinatorError>;

    /// The undecided approvals of run `run_id`, oldest first; empty unless the run is
    /// `waiting_approval` (a run cancelled while waiting lists none).
    async fn pending_approvals(
        &self,
        run_id: &str,
    ) -> Result<Vec<PendingApproval>, CoordinatorError>;

    /// Records `decision` on approval `approval_id` of run `run_id` at `now` (Unix
    /// milliseconds), its denial reason scrubbed. A request whose `expires_at` has come
    /// by `now` is recorded as a denial with
    /// [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON), whatever was answered. When
    /// it was the run's last undecided approval the run goes back to `pending` in the
    /// same transaction ([`RecordedDecision::requeued`]; a shared queue's idle workers
    /// are notified). Conditional, so that of two concurrent decisions one wins.
    ///
    /// # Errors
    /// [`CoordinatorError::RunNotFound`], [`CoordinatorError::ApprovalNotFound`] (none
    /// with this id for this run), [`CoordinatorError::ApprovalAlreadyDecided`],
    /// [`CoordinatorError::NotWaitingApproval`] (the run is not `waiting_approval`).
    async fn decide_approval(
        &self,
        run_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
        now: i64,
    ) -> Result<RecordedDecision, CoordinatorError>;

    /// The decided approvals of run `run_id` not handed out yet, oldest first, marked
    /// handed out in the same transaction: each decision reaches one execution of the
    /// run only, never two. Decided approvals stay stored (history).
    async fn take_decisions(&self, run_id: &str) -> Result<Vec<DecidedApproval>, CoordinatorError>;

    /// Denies (with [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON)) every undecided
    /// approval of a `waiting_approval` run whose `expires_at` has come by `now`, and
    /// moves each run left without an undecided approval back to `pending`, in one
    /// transaction; the ids of those runs (to be queued). Safe to run concurrently
    /// from several coordinators: each request is decided once.
    async fn expire_approvals(&self, now: i64) -> Result<Vec<String>, CoordinatorError>;

    /// The queue shared by every coordinator on this store, when the store is meant
    /// to be shared by several processes; `None` (the default) for a store of one
    /// process, whose coordinator queues runs in its own memory and marks runs left
    /// unfinished by its predecessor `interrupted` when it starts.
    fn shared_queue(&self) -> Option<Arc<dyn SharedRunQueue>> {
        None
    }
}
