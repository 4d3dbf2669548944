//! [`RunUsage`]: what a run used of its budgets over every worker that ran it — its
//! turns, tokens and cost — as stored with the run and reported by `GET /runs/{id}`.

use oxydra_runtime::UsedBudget;
use oxydra_types::Usage;
use serde::{Deserialize, Serialize};

/// What a run used of its budgets, summed over every worker that ran it (a run taken
/// over from a worker that died continues from what that worker recorded). Zero for a
/// deterministic run.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunUsage {
    /// Provider calls of the agent's loop, each counted when it is made (what
    /// `max_turns` counts).
    #[serde(default)]
    pub turns: u32,
    /// Prompt tokens of the calls that answered.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens of the calls that answered.
    #[serde(default)]
    pub output_tokens: u64,
    /// What the calls that answered cost, in US dollars (what `max_cost` counts).
    #[serde(default)]
    pub cost: f64,
}

impl From<RunUsage> for UsedBudget {
    /// The runtime's starting values for a run that already used `usage`.
    fn from(usage: RunUsage) -> Self {
        Self {
            turns: usize::try_from(usage.turns).unwrap_or(usize::MAX),
            usage: Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                ..Usage::default()
            },
            cost: usage.cost,
        }
    }
}

impl From<&UsedBudget> for RunUsage {
    /// What the runtime reports a run used, as stored (turns beyond `u32` saturate).
    fn from(used: &UsedBudget) -> Self {
        Self {
            turns: u32::try_from(used.turns).unwrap_or(u32::MAX),
            input_tokens: used.usage.input_tokens,
            output_tokens: used.usage.output_tokens,
            cost: used.cost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_goes_to_the_runtime_and_back_unchanged() {
        let usage = RunUsage {
            turns: 7,
            input_tokens: 1_000,
            output_tokens: 20,
            cost: 0.125,
        };
        let used = UsedBudget::from(usage);
        assert_eq!(used.turns, 7);
        assert_eq!(used.usage, Usage::new(1_000, 20, 0));
        assert_eq!(RunUsage::from(&used), usage);
        let huge = UsedBudget {
            turns: usize::MAX,
            ..UsedBudget::default()
        };
        assert_eq!(RunUsage::from(&huge).turns, u32::MAX);
    }

    #[test]
    fn usage_serialises_with_every_field_and_reads_missing_ones_as_zero() {
        let usage = RunUsage {
            turns: 2,
            input_tokens: 3,
            output_tokens: 4,
            cost: 0.5,
        };
        assert_eq!(
            serde_json::to_value(usage).unwrap(),
            json!({"turns": 2, "input_tokens": 3, "output_tokens": 4, "cost": 0.5})
        );
        let read: RunUsage = serde_json::from_value(json!({"turns": 1})).unwrap();
        assert_eq!(
            read,
            RunUsage {
                turns: 1,
                ..RunUsage::default()
            }
        );
    }
}
