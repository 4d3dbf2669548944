//! The run's budget bookkeeping: before each provider call of the loop, what the call
//! may cost at most checked against the cost budget; after it, its usage and cost added
//! up, the totals recorded with the run's usage ledger (so a takeover starts from them),
//! and the cost budget enforced.

use oxydra_types::Usage;
use tracing::Span;

use super::Run;
use crate::budget::Budget;
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
                Budget::MaxCost,
                format!("spent ${:.6} of a ${max_cost:.6} budget", self.cost),
            ));
        }
        Ok(())
    }

    /// `BudgetExceeded` when the next call could take the run's cost above `max_cost`:
    /// its prompt of `prompt_tokens` (the window's count), all priced as uncached
    /// input, and an answer as long as the output cap (`max_output_tokens`, else the
    /// output reserve of the context budget). So the budget is never overshot by a
    /// call of the loop, as long as the provider keeps to the cap and counts the prompt
    /// near the window's count.
    pub(super) fn check_call_cost(&self, prompt_tokens: u64) -> Result<(), RuntimeError> {
        let Some(max_cost) = self.inner.limits.max_cost else {
            return Ok(());
        };
        let output_cap = u64::from(self.inner.budget.output_reserve);
        // Whichever model answers (a fallback may cost more than the model asked).
        let Some(most) = self
            .inner
            .call_prices()
            .iter()
            .map(|price| price.cost(&Usage::new(prompt_tokens, output_cap, 0)))
            .max_by(f64::total_cmp)
        else {
            return Ok(());
        };
        if self.cost + most > max_cost {
            return Err(RuntimeError::budget(
                Budget::MaxCost,
                format!(
                    "spent ${:.6} of a ${max_cost:.6} budget; the next call may cost up to \
                     ${most:.6} ({prompt_tokens} prompt tokens, up to {output_cap} output \
                     tokens), which could exceed it",
                    self.cost
                ),
            ));
        }
        Ok(())
    }

    /// The run's totals so far: turns, tokens and cost.
    pub(super) fn used(&self) -> UsedBudget {
        UsedBudget {
            turns: self.turn,
            usage: self.usage,
            cost: self.cost,
        }
    }

    /// Records the run's totals with its ledger, if it has one, and waits for the
    /// record (cancellable, and within the turn timeout).
    pub(super) async fn record_usage(&self) -> Result<(), RuntimeError> {
        let Some(ledger) = self.ledger else {
            return Ok(());
        };
        let used = self.used();
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
