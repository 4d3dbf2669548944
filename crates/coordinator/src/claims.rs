//! [`SharedRunQueue`]: a run queue kept in the store itself, shared by every
//! coordinator process on the same database.
//!
//! With a shared queue a coordinator does not queue runs in its own memory: any
//! worker of any process claims the oldest pending run, holds it under a lease it
//! renews while the run lives, and ends it through the lease (a worker whose lease
//! lapsed can no longer end the run). A run whose holder died — its lease expired — is
//! claimed again by another worker and continued from its stored session.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::CoordinatorError;
use crate::run::{RunError, RunStatus};
use crate::run_usage::RunUsage;

/// A run a worker claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRun {
    /// The run's id.
    pub run_id: String,
    /// The blueprint it runs.
    pub agent_name: String,
    /// Its stored (scrubbed) parameters.
    pub parameters: Value,
    /// Whether an earlier holder started it and died: the run continues from what it
    /// stored.
    pub resumed: bool,
    /// Whether a cancel was asked for while it had no live holder.
    pub cancel_requested: bool,
    /// What its earlier holders used of its budgets (zero on a first claim): the
    /// worker starts the run's counters there.
    pub used: RunUsage,
}

/// What renewing a claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// Still this worker's, lease extended.
    Held,
    /// Still this worker's, and a cancel was asked for (on any process).
    CancelRequested,
    /// No longer this worker's (the lease lapsed and another worker took the run, or
    /// the run was ended elsewhere): stop without ending it.
    Lost,
}

/// The queue of a store shared by several coordinators (see the module docs).
#[async_trait]
pub trait SharedRunQueue: Send + Sync + std::fmt::Debug {
    /// Claims the oldest run that is pending, or running under an expired lease, for
    /// `holder` until `ttl` from now, moving it to running, with what it used so far.
    /// Concurrent claimers never get the same run.
    async fn claim_next(
        &self,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<ClaimedRun>, CoordinatorError>;

    /// Extends `holder`'s lease on `run_id` until `ttl` from now.
    async fn renew_claim(
        &self,
        run_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<ClaimState, CoordinatorError>;

    /// Ends `run_id` (results scrubbed) if `holder` still holds it; `false` otherwise.
    async fn finish_claimed(
        &self,
        run_id: &str,
        holder: &str,
        status: RunStatus,
        result: Option<Value>,
        error: Option<RunError>,
    ) -> Result<bool, CoordinatorError>;

    /// Gives `holder`'s claim on `run_id` up without ending the run (its coordinator is
    /// shutting down): another worker takes it over at once.
    async fn release_claim(&self, run_id: &str, holder: &str) -> Result<(), CoordinatorError>;

    /// Asks the holder of running run `run_id` to cancel it (it sees the request when
    /// it next renews); a pending run, or one waiting for approval, is ended
    /// `cancelled` at once. `false` when the run had already ended or does not exist.
    async fn request_cancel(&self, run_id: &str) -> Result<bool, CoordinatorError>;

    /// Waits until new work may be available or `timeout` passes (a store may wake
    /// early on a notification).
    async fn wait_for_work(&self, timeout: Duration);
}
