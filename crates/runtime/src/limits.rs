//! The budgets a session runs under.

use std::time::Duration;

use crate::error::RuntimeError;

/// Provider calls per run when nothing else is said.
pub const DEFAULT_MAX_TURNS: usize = 8;
/// The limit on every provider call and every tool batch when nothing else is said.
pub const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(120);
/// The share of the usable context at which older turns are summarised, when nothing
/// else is said.
pub const DEFAULT_SUMMARY_TRIGGER_RATIO: f64 = 0.8;

/// Turn, cost, time and context budgets of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeLimits {
    /// Provider calls per run (default 8); one more is `BudgetExceeded`.
    pub max_turns: usize,
    /// Largest accumulated cost of one run, in US dollars (default none).
    pub max_cost: Option<f64>,
    /// Limit on every provider call and every tool batch (default 120 s).
    pub turn_timeout: Duration,
    /// Share of the usable context at which older turns are condensed into the rolling
    /// summary (default 0.8).
    pub summary_trigger_ratio: f64,
    /// Context window in tokens; `None` takes the provider's capabilities for the model.
    pub context_window: Option<u32>,
    /// Tokens kept free beside the prompt (default 512).
    pub safety_buffer_tokens: u32,
    /// Output limit sent with every request and reserved in the context budget; `None`
    /// sends none and reserves the smaller of the model's output limit and a quarter of
    /// the window.
    pub max_output_tokens: Option<u32>,
}

impl Default for RuntimeLimits {
    fn default() -> Self {
        Self {
            max_turns: DEFAULT_MAX_TURNS,
            max_cost: None,
            turn_timeout: DEFAULT_TURN_TIMEOUT,
            summary_trigger_ratio: DEFAULT_SUMMARY_TRIGGER_RATIO,
            context_window: None,
            safety_buffer_tokens: 512,
            max_output_tokens: None,
        }
    }
}

impl RuntimeLimits {
    /// Checks the limits make sense (the builder calls this).
    pub fn validate(&self) -> Result<(), RuntimeError> {
        if self.max_turns == 0 {
            return Err(RuntimeError::Config("max_turns must be at least 1".into()));
        }
        if let Some(cost) = self.max_cost
            && (!cost.is_finite() || cost < 0.0)
        {
            return Err(RuntimeError::Config(format!(
                "max_cost must be a non-negative number, got {cost}"
            )));
        }
        if self.turn_timeout.is_zero() {
            return Err(RuntimeError::Config(
                "turn_timeout must be above zero".into(),
            ));
        }
        if self.summary_trigger_ratio.is_nan() || self.summary_trigger_ratio <= 0.0 {
            return Err(RuntimeError::Config(format!(
                "summary_trigger_ratio must be above zero, got {}",
                self.summary_trigger_ratio
            )));
        }
        if self.context_window == Some(0) {
            return Err(RuntimeError::Config(
                "context_window must be above zero".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_contract() {
        let limits = RuntimeLimits::default();
        assert_eq!(limits.max_turns, 8);
        assert_eq!(limits.turn_timeout, Duration::from_secs(120));
        assert!((limits.summary_trigger_ratio - 0.8).abs() < f64::EPSILON);
        assert!(limits.validate().is_ok());
    }

    #[test]
    fn nonsense_limits_are_refused() {
        let bad = [
            RuntimeLimits {
                max_turns: 0,
                ..RuntimeLimits::default()
            },
            RuntimeLimits {
                max_cost: Some(f64::NAN),
                ..RuntimeLimits::default()
            },
            RuntimeLimits {
                max_cost: Some(-1.0),
                ..RuntimeLimits::default()
            },
            RuntimeLimits {
                turn_timeout: Duration::ZERO,
                ..RuntimeLimits::default()
            },
            RuntimeLimits {
                summary_trigger_ratio: 0.0,
                ..RuntimeLimits::default()
            },
            RuntimeLimits {
                context_window: Some(0),
                ..RuntimeLimits::default()
            },
        ];
        for limits in bad {
            assert_eq!(
                limits.validate().unwrap_err().kind(),
                "config",
                "{limits:?}"
            );
        }
    }
}
