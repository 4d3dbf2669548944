//! How a session run ended: what every entry point of a run returns.

use oxydra_types::{SessionId, Usage};

/// How a session run ended when the model gave its final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOutcome {
    /// The session (pass it again to continue the conversation).
    pub session_id: SessionId,
    /// The model's final answer.
    pub final_text: String,
    /// Provider calls of the conversation loop in this run, counting those the
    /// request gave as [already used](crate::RunRequest::already_used).
    pub turns: usize,
    /// Tokens used by this run (summaries included), and those already used.
    pub usage: Usage,
    /// Cost of this run in US dollars, and the cost already used.
    pub cost: f64,
    /// The structured answer, when the run was given an [`OutputSchema`](crate::OutputSchema) or a type
    /// (it passed the schema; `final_text` is its JSON text).
    pub output: Option<serde_json::Value>,
}
