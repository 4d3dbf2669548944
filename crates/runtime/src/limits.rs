//! The budgets a session runs under. They are also the `[runtime]` table of an
//! `oxydra.toml` (docs/configuration.md): every key is a field, durations in seconds
//! (`turn_timeout_secs`), every key left out takes its default, and an unknown key is
//! an error naming it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::RuntimeError;

/// Provider calls per run when nothing else is said.
pub const DEFAULT_MAX_TURNS: usize = 8;
/// The limit on every provider call and every tool batch when nothing else is said.
pub const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(120);
/// The share of the usable context at which older turns are summarised, when nothing
/// else is said.
pub const DEFAULT_SUMMARY_TRIGGER_RATIO: f64 = 0.8;
/// Tokens kept free beside the prompt when nothing else is said.
pub const DEFAULT_SAFETY_BUFFER_TOKENS: u32 = 512;

/// Turn, cost, time and context budgets of a session.
///
/// Built from [`Default`] and field assignment (it may gain fields):
///
/// ```
/// let mut limits = oxydra_runtime::RuntimeLimits::default();
/// limits.max_turns = 4;
/// assert!(limits.validate().is_ok());
/// ```
///
/// Read from a `[runtime]` table, it takes the defaults for the keys left out and
/// refuses the keys it does not know:
///
/// ```
/// use oxydra_runtime::RuntimeLimits;
/// let limits: RuntimeLimits = serde_json::from_str(r#"{"max_turns": 3, "turn_timeout_secs": 30}"#).unwrap();
/// assert_eq!(limits.turn_timeout, std::time::Duration::from_secs(30));
/// assert_eq!(limits.summary_trigger_ratio, oxydra_runtime::DEFAULT_SUMMARY_TRIGGER_RATIO);
/// assert!(serde_json::from_str::<RuntimeLimits>(r#"{"max_turn": 3}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct RuntimeLimits {
    /// Provider calls per run (default 8); one more is `BudgetExceeded`.
    pub max_turns: usize,
    /// Largest accumulated cost of one run, in US dollars (default none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Limit on every provider call and every tool batch (default 120 s); the key
    /// `turn_timeout_secs`, whole seconds.
    #[serde(rename = "turn_timeout_secs", with = "whole_secs")]
    pub turn_timeout: Duration,
    /// Share of the usable context at which older turns are condensed into the rolling
    /// summary (default 0.8).
    pub summary_trigger_ratio: f64,
    /// Context window in tokens; `None` takes the provider's capabilities for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Tokens kept free beside the prompt (default 512; not a key of the file).
    #[serde(skip)]
    pub safety_buffer_tokens: u32,
    /// Output limit sent with every request and reserved in the context budget; `None`
    /// sends none and reserves the smaller of the model's output limit and a quarter of
    /// the window.
    #[serde(skip_serializing_if = "Option::is_none")]
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
            safety_buffer_tokens: DEFAULT_SAFETY_BUFFER_TOKENS,
            max_output_tokens: None,
        }
    }
}

/// A [`Duration`] as whole seconds.
mod whole_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_secs)
    }
}

impl RuntimeLimits {
    /// Checks the limits make sense (the builder calls this, and `oxydra-config` for
    /// a file's `[runtime]`): at least one turn, a positive finite `max_cost`, a turn
    /// timeout above zero, a `summary_trigger_ratio` above zero and a non-zero
    /// `context_window`. A refusal is [`RuntimeError::InvalidLimit`] naming the key.
    pub fn validate(&self) -> Result<(), RuntimeError> {
        let invalid = |key, message: String| Err(RuntimeError::InvalidLimit { key, message });
        if self.max_turns == 0 {
            return invalid("max_turns", "expected at least 1, found 0".into());
        }
        if let Some(cost) = self.max_cost
            && !(cost.is_finite() && cost > 0.0)
        {
            return invalid(
                "max_cost",
                format!("expected a positive number, found {cost}"),
            );
        }
        if self.turn_timeout.is_zero() {
            return invalid("turn_timeout_secs", "expected at least 1, found 0".into());
        }
        let ratio = self.summary_trigger_ratio;
        if ratio.is_nan() || ratio <= 0.0 {
            return invalid(
                "summary_trigger_ratio",
                format!("expected a number above 0, found {ratio}"),
            );
        }
        if self.context_window == Some(0) {
            return invalid("context_window", "expected at least 1, found 0".into());
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

    fn with(change: impl FnOnce(&mut RuntimeLimits)) -> RuntimeLimits {
        let mut limits = RuntimeLimits::default();
        change(&mut limits);
        limits
    }

    #[test]
    fn nonsense_limits_are_refused_naming_their_key() {
        let bad = [
            (with(|l| l.max_turns = 0), "max_turns"),
            (with(|l| l.max_cost = Some(f64::NAN)), "max_cost"),
            (with(|l| l.max_cost = Some(-1.0)), "max_cost"),
            (with(|l| l.max_cost = Some(0.0)), "max_cost"),
            (with(|l| l.max_cost = Some(f64::INFINITY)), "max_cost"),
            (
                with(|l| l.turn_timeout = Duration::ZERO),
                "turn_timeout_secs",
            ),
            (
                with(|l| l.summary_trigger_ratio = 0.0),
                "summary_trigger_ratio",
            ),
            (
                with(|l| l.summary_trigger_ratio = f64::NAN),
                "summary_trigger_ratio",
            ),
            (with(|l| l.context_window = Some(0)), "context_window"),
        ];
        for (limits, expected) in bad {
            let error = limits.validate().unwrap_err();
            assert_eq!(error.kind(), "config", "{limits:?}");
            let RuntimeError::InvalidLimit { key, .. } = &error else {
                panic!("{error:?}");
            };
            assert_eq!(*key, expected, "{limits:?}");
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("invalid value for {expected}: expected")),
                "{error}"
            );
        }
        // A ratio above 1 (never summarise) and a small positive budget are fine.
        assert!(with(|l| l.summary_trigger_ratio = 100.0).validate().is_ok());
        assert!(with(|l| l.max_cost = Some(0.0001)).validate().is_ok());
    }

    #[test]
    fn the_runtime_table_round_trips_and_takes_defaults() {
        let limits: RuntimeLimits = serde_json::from_str(
            r#"{"max_turns": 3, "max_cost": 0.5, "turn_timeout_secs": 30,
                "summary_trigger_ratio": 0.5, "context_window": 4096, "max_output_tokens": 256}"#,
        )
        .unwrap();
        assert_eq!(limits.max_turns, 3);
        assert_eq!(limits.turn_timeout, Duration::from_secs(30));
        assert_eq!(limits.safety_buffer_tokens, DEFAULT_SAFETY_BUFFER_TOKENS);
        let text = serde_json::to_string(&limits).unwrap();
        assert!(text.contains("\"turn_timeout_secs\":30"), "{text}");
        assert!(!text.contains("safety_buffer"), "{text}");
        assert_eq!(
            serde_json::from_str::<RuntimeLimits>(&text).unwrap(),
            limits
        );
        let empty: RuntimeLimits = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, RuntimeLimits::default());
    }

    #[test]
    fn an_unknown_or_mistyped_key_is_named() {
        let unknown = serde_json::from_str::<RuntimeLimits>(r#"{"max_turn": 3}"#).unwrap_err();
        assert!(unknown.to_string().contains("`max_turn`"), "{unknown}");
        // Not a key of the file: the buffer is the library's to set.
        let hidden =
            serde_json::from_str::<RuntimeLimits>(r#"{"safety_buffer_tokens": 1}"#).unwrap_err();
        assert!(
            hidden.to_string().contains("safety_buffer_tokens"),
            "{hidden}"
        );
        let mistyped =
            serde_json::from_str::<RuntimeLimits>(r#"{"turn_timeout_secs": 1.5}"#).unwrap_err();
        assert!(mistyped.to_string().contains("u64"), "{mistyped}");
    }
}
