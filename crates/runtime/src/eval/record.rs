//! [`RunRecord`]: what one run of a task gave, as the checks judge it.

use oxydra_types::{Message, Usage};

use crate::session_outcome::SessionOutcome;

/// What one run of a task gave: the final answer, the tools called, turns, tokens
/// and cost.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunRecord {
    /// The final answer.
    pub answer: String,
    /// The name of every tool call, in order.
    pub tool_calls: Vec<String>,
    /// Provider calls of the run.
    pub turns: usize,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in US dollars.
    pub cost: f64,
}

impl RunRecord {
    /// The record of a finished run: its outcome and the session's stored
    /// `messages` (the tool calls are read from them).
    pub fn from_session(outcome: &SessionOutcome, messages: &[Message]) -> Self {
        Self {
            answer: outcome.final_text.clone(),
            tool_calls: messages
                .iter()
                .flat_map(|message| message.tool_calls.iter().map(|call| call.name.clone()))
                .collect(),
            turns: outcome.turns,
            usage: outcome.usage,
            cost: outcome.cost,
        }
    }

    /// How many times `tool` was called.
    pub fn calls_of(&self, tool: &str) -> usize {
        self.tool_calls.iter().filter(|name| *name == tool).count()
    }
}
