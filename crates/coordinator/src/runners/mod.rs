//! How a run is executed: the [`RunExecutor`] boundary and its real implementations,
//! [`AgentRunner`] (an `AgentRuntime` per run) and [`DeterministicRunner`] (templated
//! tool steps through the `ToolExecutor`, no model), joined by [`BlueprintRunner`].

mod agent;
mod deps;
mod deterministic;
#[cfg(all(test, feature = "sqlite"))]
mod takeover_tests;

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_types::RunId;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

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
    /// Whether the run was started by a worker that died and is being continued from
    /// what it stored (an agent run continues its stored session).
    pub resumed: bool,
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

/// Executes runs. The worker pool calls it once per run, under the concurrency bound.
#[async_trait]
pub trait RunExecutor: Send + Sync + 'static {
    /// Runs `run` to the end: its result (stored as the run's `result`), or why it
    /// failed.
    async fn execute(&self, run: RunRequest) -> Result<Value, RunError>;
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
    async fn execute(&self, run: RunRequest) -> Result<Value, RunError> {
        match run.blueprint.body() {
            BlueprintBody::Agent(_) => self.agents.execute(run).await,
            BlueprintBody::Deterministic(_) => self.pipelines.execute(run).await,
        }
    }
}
