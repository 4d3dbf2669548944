//! What a run has used of its budgets, and where it records that as it goes.
//!
//! A run continued by another process (its first process died mid-run), or resumed
//! with a person's approval decisions, must not get its budgets afresh. A run that
//! stops to wait for approval puts what it used in each
//! [`PendingApproval`](crate::PendingApproval) (`used`), from which the resume
//! starts; [`RunRequest::already_used`](crate::RunRequest::already_used) starts the
//! run's counters from what an earlier process used; and a [`UsageLedger`] given with
//! [`RunRequest::usage_ledger`](crate::RunRequest::usage_ledger) is told the run's
//! totals as they grow, so whoever continues the run next can start from them.

use async_trait::async_trait;
use oxydra_types::Usage;
use serde::{Deserialize, Serialize};

use crate::error::RuntimeError;

/// What a run has used of its budgets: provider calls of its loop (`max_turns`
/// counts them), tokens and cost (`max_cost` counts it). As JSON (it travels with a
/// [`PendingApproval`](crate::PendingApproval)) a missing field is zero.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UsedBudget {
    /// Provider calls of the conversation loop, each counted when it is made.
    #[serde(default)]
    pub turns: usize,
    /// Tokens of the provider calls that answered.
    #[serde(default)]
    pub usage: Usage,
    /// Cost of the provider calls that answered, in US dollars.
    #[serde(default)]
    pub cost: f64,
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_non_negative_finite_cost_is_accepted() {
        for cost in [0.0, 0.5, 1e9] {
            let used = UsedBudget {
                cost,
                ..UsedBudget::default()
            };
            assert!(used.validate().is_ok(), "{cost}");
        }
        for cost in [-0.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let used = UsedBudget {
                cost,
                ..UsedBudget::default()
            };
            let error = used.validate().unwrap_err();
            assert_eq!(error.kind(), "config", "{cost}");
            assert!(error.to_string().contains("already used"), "{error}");
        }
    }
}
