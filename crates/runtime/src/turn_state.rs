//! The state machine of a session's turns.

use std::fmt;

/// Where the turn loop is. `Yielding` and `Cancelled` are terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnState {
    /// Receiving a response from the provider.
    Streaming,
    /// Running the tool calls the model asked for.
    ToolExecution,
    /// Terminal: the model answered without tool calls.
    Yielding,
    /// Terminal: the cancellation token fired.
    Cancelled,
}

impl TurnState {
    /// The state's name for traces: `streaming`, `tool_execution`, `yielding`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Streaming => "streaming",
            Self::ToolExecution => "tool_execution",
            Self::Yielding => "yielding",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the loop ends in this state.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Yielding | Self::Cancelled)
    }

    /// Whether the loop may move from `self` to `next`.
    pub fn can_move_to(self, next: TurnState) -> bool {
        use TurnState::{Cancelled, Streaming, ToolExecution, Yielding};
        matches!(
            (self, next),
            (Streaming, ToolExecution | Yielding | Cancelled)
                | (ToolExecution, Streaming | Yielding | Cancelled)
        )
    }
}

impl fmt::Display for TurnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The current state of a session's loop and every state it went through, each move
/// logged with `tracing` (an illegal move is logged as an error and still recorded, so
/// a bug shows up in traces rather than as a crash).
#[derive(Debug, Clone)]
pub struct TurnTracker {
    history: Vec<(usize, TurnState)>,
}

impl Default for TurnTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl TurnTracker {
    /// A tracker that has not entered any state yet.
    pub fn new() -> Self {
        Self {
            history: Vec::new(),
        }
    }

    /// The current state (`None` before the first provider call).
    pub fn current(&self) -> Option<TurnState> {
        self.history.last().map(|(_, state)| *state)
    }

    /// Every `(turn, state)` entered, in order.
    pub fn history(&self) -> &[(usize, TurnState)] {
        &self.history
    }

    /// Moves to `next` during `turn`.
    pub fn enter(&mut self, turn: usize, next: TurnState) {
        match self.current() {
            None if next == TurnState::Streaming || next == TurnState::Cancelled => {
                tracing::debug!(turn, to = next.as_str(), "turn state");
            }
            Some(current) if current.can_move_to(next) => {
                tracing::debug!(
                    turn,
                    from = current.as_str(),
                    to = next.as_str(),
                    "turn state"
                );
            }
            current => {
                tracing::error!(
                    turn,
                    from = current.map(TurnState::as_str).unwrap_or("start"),
                    to = next.as_str(),
                    "illegal turn state transition"
                );
            }
        }
        self.history.push((turn, next));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_moves_follow_the_loop() {
        use TurnState::*;
        assert!(Streaming.can_move_to(ToolExecution));
        assert!(Streaming.can_move_to(Yielding));
        assert!(ToolExecution.can_move_to(Streaming));
        assert!(ToolExecution.can_move_to(Cancelled));
        assert!(!Yielding.can_move_to(Streaming));
        assert!(!Cancelled.can_move_to(Streaming));
        assert!(!Streaming.can_move_to(Streaming));
        assert!(Yielding.is_terminal() && Cancelled.is_terminal());
        assert!(!ToolExecution.is_terminal());
        assert_eq!(ToolExecution.to_string(), "tool_execution");
    }

    #[test]
    fn tracker_records_every_state() {
        let mut tracker = TurnTracker::new();
        assert_eq!(tracker.current(), None);
        tracker.enter(1, TurnState::Streaming);
        tracker.enter(1, TurnState::ToolExecution);
        tracker.enter(2, TurnState::Streaming);
        tracker.enter(2, TurnState::Yielding);
        assert_eq!(tracker.current(), Some(TurnState::Yielding));
        assert_eq!(tracker.history().len(), 4);
        assert_eq!(tracker.history()[2], (2, TurnState::Streaming));
    }
}
