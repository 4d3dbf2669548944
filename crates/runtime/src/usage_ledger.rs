//! Where a run records what it has used as it goes, so that whoever continues it next
//! starts from it; and the check of a [`UsedBudget`] given to start from.

use async_trait::async_trait;

use crate::error::RuntimeError;
use crate::used_budget::UsedBudget;

impl UsedBudget {
    /// Checks the values make sense: the cost must be a non-negative number.
    ///
    /// # Errors
    /// [`RuntimeError::Config`] naming the bad value.
    pub fn validate(&self) -> Result<(), RuntimeError> {
        if !self.cost.is_finite() || self.cost < 0.0 {
            return Err(RuntimeError::Config(format!(
                "the cost already used must be a non-negative number, got {}",
                self.cost
            )));
        }
        Ok(())
    }
}

/// The error a [`UsageLedger`] reports.
pub type LedgerError = Box<dyn std::error::Error + Send + Sync>;

/// Where a run records what it has used, as it goes: before each provider call (the
/// turn counted) and after it answered (its tokens and cost added). Each call gets the
/// run's totals, the [`already_used`](crate::RunRequest::already_used) starting values
/// included. The run waits for each record before it goes on; a record that fails
/// ends the run with [`RuntimeError::UsageLedger`], as its budgets could no longer be
/// held by whoever continues it.
#[async_trait]
pub trait UsageLedger: Send + Sync {
    /// Records `used`, the run's totals so far.
    async fn record(&self, used: &UsedBudget) -> Result<(), LedgerError>;
}
