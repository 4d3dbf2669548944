//! [`Compacted`]: what condensing a session on request did
//! ([`AgentRuntime::compact`](crate::AgentRuntime::compact)).

use oxydra_types::Usage;

/// What [`AgentRuntime::compact`](crate::AgentRuntime::compact) did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Compacted {
    /// The summary now sent in place of the condensed turns; `None` when there was
    /// nothing to condense (the conversation is one turn long, or condensed already).
    pub summary: Option<String>,
    /// The summarisation call's tokens (zero when nothing was condensed).
    pub usage: Usage,
    /// Its cost in US dollars.
    pub cost: f64,
}
