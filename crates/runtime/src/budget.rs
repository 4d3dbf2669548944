//! [`Budget`]: which budget of a run ran out.

use serde::{Deserialize, Serialize};

/// Which budget of a run ran out ([`RuntimeError::BudgetExceeded`](crate::RuntimeError::BudgetExceeded)).
///
/// Shown and serialised as the name of the limit in
/// [`RuntimeLimits`](crate::RuntimeLimits) (`max_turns`, `max_cost`, `turn_timeout`),
/// the string the error's message and the wire formats carried before it was an enum.
/// More budgets may come: match it with a catch-all arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    /// Provider calls per run (`RuntimeLimits::max_turns`).
    MaxTurns,
    /// The run's cost in US dollars (`RuntimeLimits::max_cost`).
    MaxCost,
    /// The time one turn may take (`RuntimeLimits::turn_timeout`).
    TurnTimeout,
}

impl Budget {
    /// The limit's name: `max_turns`, `max_cost` or `turn_timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTurns => "max_turns",
            Self::MaxCost => "max_cost",
            Self::TurnTimeout => "turn_timeout",
        }
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_the_limit_name_as_text_and_as_json() {
        for (budget, name) in [
            (Budget::MaxTurns, "max_turns"),
            (Budget::MaxCost, "max_cost"),
            (Budget::TurnTimeout, "turn_timeout"),
        ] {
            assert_eq!(budget.to_string(), name);
            assert_eq!(budget.as_str(), name);
            assert_eq!(
                serde_json::to_value(budget).ok(),
                Some(serde_json::Value::String(name.into()))
            );
            assert_eq!(
                serde_json::from_value::<Budget>(serde_json::Value::String(name.into())).ok(),
                Some(budget)
            );
        }
        assert!(serde_json::from_str::<Budget>("\"max_tokens\"").is_err());
    }
}
