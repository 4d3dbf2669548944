//! How much a reasoning model may think: OpenAI's reasoning effort and the thinking
//! budget of Anthropic and Gemini.

use std::fmt;
use std::str::FromStr;

use crate::error::ProviderError;

/// OpenAI's `reasoning_effort` (chat completions) / `reasoning.effort` (Responses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasoningEffort {
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`.
    High,
}

impl ReasoningEffort {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReasoningEffort {
    type Err = ProviderError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "minimal" => Ok(Self::Minimal),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => Err(ProviderError::InvalidConfig {
                what: "reasoning effort".into(),
                message: format!("`{other}` is not one of minimal, low, medium, high"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_parses_its_wire_names_only() {
        for effort in [
            ReasoningEffort::Minimal,
            ReasoningEffort::Low,
            ReasoningEffort::Medium,
            ReasoningEffort::High,
        ] {
            assert_eq!(effort.as_str().parse::<ReasoningEffort>().unwrap(), effort);
        }
        let error = "extreme".parse::<ReasoningEffort>().unwrap_err();
        assert!(error.to_string().contains("extreme"), "{error}");
    }
}
