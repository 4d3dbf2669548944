//! The run's budget bookkeeping after each provider call: its usage and cost added up,
//! the totals recorded with the run's usage ledger (so a takeover starts from them), and
//! the cost budget enforced.

use tracing::Span;

use super::Run;
use crate::error::RuntimeError;
use crate::provider_call::ProviderCall;
use crate::used_budget::UsedBudget;

impl Run<'_> {
    /// Adds a call's usage and cost to the run's, records the totals and enforces the
    /// cost budget.
    pub(super) async fn account(
        &mut self,
        call: &ProviderCall,
        span: &Span,
    ) -> Result<(), RuntimeError> {
        self.usage += call.response.usage;
        self.cost += call.cost;
        span.record("accumulated_cost", self.cost);
        let recorded = self.record_usage().await;
        recorded.map_err(|error| self.fail(span, error))?;
        self.check_cost()
    }

    /// `BudgetExceeded` once the run's cost is above `max_cost`.
    pub(super) fn check_cost(&self) -> Result<(), RuntimeError> {
        if let Some(max_cost) = self.inner.limits.max_cost
            && self.cost > max_cost
        {
            return Err(RuntimeError::budget(
                "max_cost",
                format!("spent ${:.6} of a ${max_cost:.6} budget", self.cost),
            ));
        }
        Ok(())
    }

    /// Records the run's totals with its ledger, if it has one, and waits for the
    /// record (cancellable, and within the turn timeout).
    pub(super) async fn record_usage(&self) -> Result<(), RuntimeError> {
        let Some(ledger) = self.ledger else {
            return Ok(());
        };
        let used = UsedBudget {
            turns: self.turn,
            usage: self.usage,
            cost: self.cost,
        };
        let timeout = self.inner.limits.turn_timeout;
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(RuntimeError::Cancelled),
            recorded = tokio::time::timeout(timeout, ledger.record(&used)) => match recorded {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(RuntimeError::UsageLedger(error.to_string())),
                Err(_) => Err(RuntimeError::UsageLedger(format!(
                    "no answer within the turn timeout of {} ms",
                    timeout.as_millis()
                ))),
            },
        }
    }
}
