//! [`RunLedger`]: where the executor of a run records what the run used as it goes
//! (its [`RunUsage`] in the run's row), so that a worker taking the run over starts
//! its budget counters from there and `max_turns` / `max_cost` hold over the whole run.

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_runtime::{LedgerError, UsageLedger, UsedBudget};

use crate::error::CoordinatorError;
use crate::run_usage::RunUsage;
use crate::store::RunStore;

/// Records one run's usage in the store holding it (see the module docs). Cheap to
/// clone. As an [`UsageLedger`] it is what the agent runner gives the runtime.
#[derive(Clone)]
pub struct RunLedger {
    store: Option<Arc<dyn RunStore>>,
    run_id: String,
}

impl std::fmt::Debug for RunLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLedger")
            .field("run_id", &self.run_id)
            .field("stored", &self.store.is_some())
            .finish()
    }
}

impl RunLedger {
    /// Records the usage of run `run_id` in `store`.
    pub fn new(store: Arc<dyn RunStore>, run_id: impl Into<String>) -> Self {
        Self {
            store: Some(store),
            run_id: run_id.into(),
        }
    }

    /// A ledger that records nothing (an executor run outside a coordinator).
    pub fn detached(run_id: impl Into<String>) -> Self {
        Self {
            store: None,
            run_id: run_id.into(),
        }
    }

    /// The run it records for.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Records `usage`, the run's totals so far ([`RunStore::record_usage`]). A run no
    /// longer running (ended or cancelled meanwhile) is not an error: nothing is
    /// stored.
    ///
    /// # Errors
    /// The store's error when it cannot record.
    pub async fn record_usage(&self, usage: RunUsage) -> Result<(), CoordinatorError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        if !store.record_usage(&self.run_id, usage).await? {
            tracing::debug!(run_id = %self.run_id, "usage not recorded: the run is not running");
        }
        Ok(())
    }
}

#[async_trait]
impl UsageLedger for RunLedger {
    async fn record(&self, used: &UsedBudget) -> Result<(), LedgerError> {
        self.record_usage(RunUsage::from(used))
            .await
            .map_err(LedgerError::from)
    }
}
