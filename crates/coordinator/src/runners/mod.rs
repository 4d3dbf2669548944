//! How a run is executed: the [`RunExecutor`] boundary and its real implementations,
//! [`AgentRunner`] (an `AgentRuntime` per run) and [`DeterministicRunner`] (templated
//! tool steps through the `ToolExecutor`, no model), joined by [`BlueprintRunner`].

mod agent;
mod deps;
mod deterministic;
#[cfg(all(test, feature = "sqlite"))]
mod step_intents_tests;
#[cfg(all(test, feature = "sqlite"))]
mod takeover_tests;

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_runtime::PendingApproval;
use oxydra_types::RunId;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval_row::DecidedApproval;
use crate::blueprint::{Blueprint, BlueprintBody};
use crate::run::RunError;
use crate::run_ledger::RunLedger;
use crate::run_usage::RunUsage;

pub use agent::AgentRunner;
pub use deps::RunnerDeps;
pub use deterministic::DeterministicRunner;

/// One run handed to a [`RunExecutor`].
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The run's id.
    pub run_id: RunId,
    /// The blueprint it runs.
    pub blueprint: Arc<Blueprint>,
    /// Its validated parameters.
    pub parameters: Value,
    /// Whether the run was started before (by a worker that died, or before it waited
    /// for approval) and is being continued from what it stored (an agent run
    /// continues its stored session).
    pub resumed: bool,
    /// The decisions a person made on the approvals the run waited for, handed to this
    /// execution only: an agent run resumes its session with them
    /// (`RunRequest::decide` of the runtime) instead of sending its prompt. Empty for a
    /// run that did not wait.
    pub decisions: Vec<DecidedApproval>,
    /// What the run used of its budgets before this execution (an earlier worker's
    /// turns, tokens and cost; zero for a fresh run): an agent run's counters start
    /// there, so `max_turns` and `max_cost` hold over the whole run.
    pub used: RunUsage,
    /// Where the executor records what the run used as it goes (totals, `used`
    /// included), for whoever continues the run and for `GET /runs/{id}`.
    pub ledger: RunLedger,
    /// Fires when the run is cancelled or the coordinator stops; the executor must
    /// end promptly (it is dropped after a short grace period otherwise).
    pub cancel: CancellationToken,
}

/// How an execution of a run ended when it did not fail.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// The run finished: its result (stored as the run's `result`).
    Finished(Value),
    /// The run stopped before tool calls that need a person's decision: it moves to
    /// `waiting_approval` with these requests, frees its worker, and is executed again
    /// (with [`RunRequest::decisions`]) once every one is decided or expired.
    AwaitingApproval(Vec<PendingApproval>),
}

impl From<Value> for RunOutcome {
    fn from(result: Value) -> Self {
        Self::Finished(result)
    }
}

/// Executes runs. The worker pool calls it once per execution, under the concurrency
/// bound: once per run, and once more each time a run that waited for approval was
/// decided.
#[async_trait]
pub trait RunExecutor: Send + Sync + 'static {
    /// Runs `run` until it ends ([`RunOutcome::Finished`]) or waits for a person
    /// ([`RunOutcome::AwaitingApproval`]), or says why it failed.
    async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError>;
}

/// The executor the coordinator uses by default: AI agents go to an [`AgentRunner`],
/// deterministic blueprints to a [`DeterministicRunner`].
pub struct BlueprintRunner {
    agents: AgentRunner,
    pipelines: DeterministicRunner,
}

impl std::fmt::Debug for BlueprintRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlueprintRunner").finish_non_exhaustive()
    }
}

impl BlueprintRunner {
    /// Joins the two runners.
    pub fn new(agents: AgentRunner, pipelines: DeterministicRunner) -> Self {
        Self { agents, pipelines }
    }
}

#[async_trait]
impl RunExecutor for BlueprintRunner {
    async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
        match run.blueprint.body() {
            BlueprintBody::Agent(_) => self.agents.execute(run).await,
            BlueprintBody::Deterministic(_) => self.pipelines.execute(run).await.map(Into::into),
        }
    }
}
