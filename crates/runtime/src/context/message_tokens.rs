//! The token cost of one message, and which count budgeting uses.

use oxydra_types::Message;

use super::tokens::{message_count, message_estimate, message_upper_bound};

/// Which count a context window budgets with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// The cheap estimate (no encoder needed).
    Estimate,
    /// The exact `cl100k_base` count.
    Exact,
}

/// The sum of the counts under `mode` of messages paired with their costs (each exact
/// count computed once and kept in its [`MessageTokens`]).
pub(crate) fn sum_counted<'a>(
    messages: impl IntoIterator<Item = (&'a mut MessageTokens, &'a Message)>,
    mode: CountMode,
) -> u64 {
    messages
        .into_iter()
        .fold(0, |total: u64, (tokens, message)| {
            total.saturating_add(u64::from(tokens.counted(message, mode)))
        })
}

/// The token cost of one message: its upper bound and estimate, computed when the
/// message is added, and its exact count, computed the first time it is asked for and
/// then kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageTokens {
    upper: u32,
    estimate: u32,
    exact: Option<u32>,
}

impl MessageTokens {
    /// The cost of `message`, with only the upper bound and the estimate computed.
    pub fn new(message: &Message) -> Self {
        Self {
            upper: message_upper_bound(message),
            estimate: message_estimate(message),
            exact: None,
        }
    }

    /// The upper bound.
    pub fn upper(&self) -> u32 {
        self.upper
    }

    /// The estimate.
    pub fn estimate(&self) -> u32 {
        self.estimate
    }

    /// The count budgeting uses under `mode`: the estimate, or the exact count
    /// (computed once).
    pub fn counted(&mut self, message: &Message, mode: CountMode) -> u32 {
        match mode {
            CountMode::Estimate => self.estimate,
            CountMode::Exact => self.exact(message),
        }
    }

    /// The exact count if it has been computed.
    pub fn cached_exact(&self) -> Option<u32> {
        self.exact
    }

    /// Takes `exact` as the exact count (one computed earlier for the same message).
    pub(crate) fn seed_exact(&mut self, exact: u32) {
        self.exact = Some(exact.min(self.upper));
    }

    /// The exact count of `message` (which must be the message this was made for),
    /// computed once.
    pub fn exact(&mut self, message: &Message) -> u32 {
        match self.exact {
            Some(exact) => exact,
            None => {
                let exact = message_count(message).min(self.upper);
                self.exact = Some(exact);
                exact
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::MESSAGE_OVERHEAD;
    use oxydra_types::{CallId, ToolCall};

    #[test]
    fn exact_counts_are_computed_once_and_never_above_the_bound() {
        let call = ToolCall::new(CallId::from("call_1"), "file_read", r#"{"path":"a.rs"}"#);
        let messages = [
            Message::user("what is in a.rs?"),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("call_1"), "file_read", "fn main() {}"),
        ];
        for message in &messages {
            let mut tokens = MessageTokens::new(message);
            assert_eq!(tokens.cached_exact(), None);
            let exact = tokens.exact(message);
            assert!(exact >= MESSAGE_OVERHEAD);
            assert!(exact <= tokens.upper());
            assert_eq!(tokens.cached_exact(), Some(exact));
        }
    }

    #[test]
    fn the_estimate_mode_never_counts_exactly() {
        let message = Message::user("a".repeat(30));
        let mut tokens = MessageTokens::new(&message);
        assert_eq!(tokens.counted(&message, CountMode::Estimate), 14);
        assert_eq!(tokens.cached_exact(), None);
    }
}
