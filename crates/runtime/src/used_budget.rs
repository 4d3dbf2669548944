//! What a run has used of its budgets (where it records that as it goes is
//! [`UsageLedger`](crate::UsageLedger), its own module).
//!
//! A run continued by another process (its first process died mid-run), or resumed
//! with a person's approval decisions, must not get its budgets afresh. A run that
//! stops to wait for approval puts what it used in each
//! [`PendingApproval`](crate::PendingApproval) (`used`), from which the resume
//! starts; [`RunRequest::already_used`](crate::RunRequest::already_used) starts the
//! run's counters from what an earlier process used; and a
//! [`UsageLedger`](crate::UsageLedger) given with
//! [`RunRequest::usage_ledger`](crate::RunRequest::usage_ledger) is told the run's
//! totals as they grow, so whoever continues the run next can start from them.

use oxydra_types::Usage;
use serde::{Deserialize, Serialize};

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
