//! Token usage.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens a provider call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache (a subset of `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache by this call (a subset of
    /// `input_tokens`; Anthropic's `cache_creation_input_tokens`, OpenAI's
    /// `cache_write_tokens`). Priced at the cache-write rate where the vendor has one.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens the model spent reasoning (a subset of `output_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Usage from its three counts.
    pub fn new(input_tokens: u64, output_tokens: u64, cached_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cached_tokens,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        }
    }

    /// This usage with `tokens` written to the prompt cache.
    pub fn with_cache_write_tokens(mut self, tokens: u64) -> Self {
        self.cache_write_tokens = tokens;
        self
    }

    /// This usage with `tokens` of its output spent on reasoning.
    pub fn with_reasoning_tokens(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// Prompt tokens read neither from nor written to the cache: the ones billed at
    /// the plain input rate.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Whether nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(rhs.input_tokens),
            output_tokens: self.output_tokens.saturating_add(rhs.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(rhs.cached_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(rhs.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(rhs.reasoning_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_and_saturates() {
        let mut total = Usage::new(10, 5, 2);
        total += Usage::new(1, 1, 1);
        assert_eq!(total, Usage::new(11, 6, 3));
        assert_eq!(total.total_tokens(), 17);
        let huge = Usage::new(u64::MAX, 0, 0) + Usage::new(1, 0, 0);
        assert_eq!(huge.input_tokens, u64::MAX);
        assert!(Usage::default().is_zero());
        let cached = Usage::new(100, 10, 30)
            .with_cache_write_tokens(50)
            .with_reasoning_tokens(4);
        assert_eq!(cached.uncached_input_tokens(), 20);
        let twice = cached + cached;
        assert_eq!((twice.cache_write_tokens, twice.reasoning_tokens), (100, 8));
    }

    #[test]
    fn usage_round_trips_and_defaults_missing_fields() {
        let usage = Usage::new(3, 4, 1);
        let json = serde_json::to_string(&usage).unwrap();
        assert_eq!(
            json,
            r#"{"input_tokens":3,"output_tokens":4,"cached_tokens":1,"cache_write_tokens":0,"reasoning_tokens":0}"#
        );
        assert_eq!(serde_json::from_str::<Usage>(&json).unwrap(), usage);
        let partial: Usage = serde_json::from_str(r#"{"input_tokens":3}"#).unwrap();
        assert_eq!(partial, Usage::new(3, 0, 0));
    }
}
