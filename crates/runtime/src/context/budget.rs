//! How many tokens the prompt may take, and how full it is.
//!
//! The window of the model holds: system prompt, rolling summary, retrieved snippets,
//! tool schemas, history (newest first) — and, kept free, the output reserve and a
//! safety buffer. [`ContextBudget::available`] is what the prompt may use.

use std::sync::OnceLock;

use oxydra_provider::ProviderCapabilities;

use super::message_tokens::CountMode;
use super::tokens;
use crate::limits::RuntimeLimits;

/// The token budget of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextBudget {
    /// The model's context window.
    pub context_window: u32,
    /// Tokens kept for the answer.
    pub output_reserve: u32,
    /// Tokens kept free as headroom for counting differences between tokenizers.
    pub safety_buffer: u32,
}

impl ContextBudget {
    /// The budget for `limits` on a provider with `capabilities`: the window is the
    /// limits' override or the provider's; the output reserve is `max_output_tokens`, or
    /// the smaller of the model's output limit and a quarter of the window.
    pub fn new(limits: &RuntimeLimits, capabilities: &ProviderCapabilities) -> Self {
        let context_window = limits
            .context_window
            .unwrap_or(capabilities.context_window)
            .max(1);
        let output_reserve = limits
            .max_output_tokens
            .unwrap_or_else(|| capabilities.max_output_tokens.min(context_window / 4));
        Self {
            context_window,
            output_reserve,
            safety_buffer: limits.safety_buffer_tokens,
        }
    }

    /// Tokens the prompt may use.
    pub fn available(&self) -> u64 {
        u64::from(
            self.context_window
                .saturating_sub(self.output_reserve)
                .saturating_sub(self.safety_buffer),
        )
    }

    /// The prompt size above which the rolling summary condenses older turns.
    pub fn summary_threshold(&self, trigger_ratio: f64) -> u64 {
        let threshold = self.available() as f64 * trigger_ratio;
        if threshold >= u64::MAX as f64 {
            u64::MAX
        } else {
            threshold.max(0.0) as u64
        }
    }
}

/// How full a prepared prompt is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextReport {
    /// Tokens of the prompt (exact when `exact`, else an upper bound).
    pub tokens: u64,
    /// Whether `tokens` was counted exactly.
    pub exact: bool,
    /// Tokens the prompt may use.
    pub available: u64,
    /// History messages left out of the prompt.
    pub dropped: usize,
}

impl ContextReport {
    /// `tokens / available`, the share of the budget in use.
    pub fn utilisation(&self) -> f64 {
        if self.available == 0 {
            return 1.0;
        }
        self.tokens as f64 / self.available as f64
    }
}

/// The tokens of a text that is part of every prompt (the tool schemas): an upper
/// bound at once, the exact count computed once on demand.
#[derive(Debug, Default)]
pub struct FixedTokens {
    text: String,
    upper: u64,
    estimate: u64,
    exact: OnceLock<u64>,
}

impl FixedTokens {
    /// The cost of `text`.
    pub fn new(text: String) -> Self {
        let upper = u64::from(tokens::upper_bound(&text));
        let estimate = u64::from(tokens::estimate(&text));
        Self {
            text,
            upper,
            estimate,
            exact: OnceLock::new(),
        }
    }

    /// The upper bound.
    pub fn upper(&self) -> u64 {
        self.upper
    }

    /// The estimate (see [`tokens::estimate`]).
    pub fn estimate(&self) -> u64 {
        self.estimate
    }

    /// The count budgeting uses under `mode`.
    pub fn counted(&self, mode: CountMode) -> u64 {
        match mode {
            CountMode::Estimate => self.estimate,
            CountMode::Exact => self.exact(),
        }
    }

    /// The text, and whether its exact count is still to be computed.
    pub(crate) fn uncounted_text(&self) -> Option<&str> {
        self.exact.get().is_none().then_some(self.text.as_str())
    }

    /// The exact count, if it was computed already.
    pub(crate) fn exact_if_counted(&self) -> Option<u64> {
        self.exact.get().copied()
    }

    /// Takes `exact` as the exact count (computed elsewhere for the same text).
    pub(crate) fn seed_exact(&self, exact: u64) {
        let _ = self.exact.set(exact);
    }

    /// The exact count (computed on first use).
    pub fn exact(&self) -> u64 {
        *self
            .exact
            .get_or_init(|| u64::from(tokens::count(&self.text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(window: u32, output: u32) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            context_window: window,
            max_output_tokens: output,
        }
    }

    #[test]
    fn budget_takes_the_override_and_reserves_output() {
        let limits = RuntimeLimits {
            context_window: Some(10_000),
            safety_buffer_tokens: 500,
            max_output_tokens: Some(1_000),
            ..RuntimeLimits::default()
        };
        let budget = ContextBudget::new(&limits, &caps(128_000, 16_000));
        assert_eq!(budget.context_window, 10_000);
        assert_eq!(budget.available(), 8_500);
        assert_eq!(budget.summary_threshold(0.8), 6_800);
        let report = ContextReport {
            tokens: 4_250,
            exact: true,
            available: budget.available(),
            dropped: 0,
        };
        assert!((report.utilisation() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn budget_defaults_to_the_provider_and_a_quarter_for_output() {
        let limits = RuntimeLimits {
            safety_buffer_tokens: 0,
            ..RuntimeLimits::default()
        };
        let budget = ContextBudget::new(&limits, &caps(8_000, 16_000));
        assert_eq!(budget.output_reserve, 2_000);
        assert_eq!(budget.available(), 6_000);
        assert_eq!(budget.summary_threshold(f64::INFINITY), u64::MAX);
        let tiny = ContextBudget::new(
            &RuntimeLimits {
                safety_buffer_tokens: 100,
                ..RuntimeLimits::default()
            },
            &caps(50, 10),
        );
        assert_eq!(tiny.available(), 0);
    }

    #[test]
    fn fixed_tokens_count_once() {
        let fixed = FixedTokens::new("hello world".into());
        assert_eq!(fixed.upper(), 11);
        assert_eq!(fixed.estimate(), 4);
        assert_eq!(fixed.counted(CountMode::Estimate), 4);
        assert_eq!(fixed.exact(), 2);
        assert_eq!(fixed.exact(), 2);
    }
}
