//! The state machine of a session's turns.

use std::fmt;

/// Where the turn loop is. `Yielding` and `Cancelled` are terminal.
///
/// The moves: a run starts `Streaming` (or is `Cancelled` before its first call);
/// `Streaming` → `ToolExecution` | `Yielding` | `Cancelled`; `ToolExecution` →
/// `Streaming` | `Yielding` | `Cancelled` | `AwaitingApproval`. A run resumed with a
/// person's decisions starts in `AwaitingApproval` (where the run that asked ended) and
/// moves on to `ToolExecution` (the decided calls run), `Streaming` (nothing was left
/// to run) or `Cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnState {
    /// Receiving a response from the provider.
    Streaming,
    /// Running the tool calls the model asked for.
    ToolExecution,
    /// The batch has calls that wait for a person's decision: the run ends here and a
    /// resume with the decisions starts here. Not terminal: a resume moves on.
    AwaitingApproval,
    /// Terminal: the model answered without tool calls.
    Yielding,
    /// Terminal: the cancellation token fired.
    Cancelled,
}

impl TurnState {
    /// The state's name for traces: `streaming`, `tool_execution`, `awaiting_approval`,
    /// `yielding`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Streaming => "streaming",
            Self::ToolExecution => "tool_execution",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Yielding => "yielding",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether no move leads out of this state.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Yielding | Self::Cancelled)
    }

    /// Whether the loop may move from `self` to `next`.
    pub fn can_move_to(self, next: TurnState) -> bool {
        use TurnState::{AwaitingApproval, Cancelled, Streaming, ToolExecution, Yielding};
        matches!(
            (self, next),
            (Streaming, ToolExecution | Yielding | Cancelled)
                | (
                    ToolExecution,
                    Streaming | Yielding | Cancelled | AwaitingApproval
                )
                | (AwaitingApproval, ToolExecution | Streaming | Cancelled)
        )
    }
}

impl fmt::Display for TurnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The current state of a session's loop. Each move is checked with
/// [`TurnState::can_move_to`] and logged with `tracing`; an illegal move is logged as
/// an error and still taken, so a bug shows up in traces rather than as a crash.
#[derive(Debug, Clone, Default)]
pub struct TurnTracker {
    current: Option<TurnState>,
}

impl TurnTracker {
    /// A tracker that has not entered any state yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tracker for a run resumed with a person's decisions: it starts in
    /// [`TurnState::AwaitingApproval`], where the run that asked ended, so running the
    /// decided calls is a legal move to [`TurnState::ToolExecution`].
    pub fn resumed_after_approval() -> Self {
        Self {
            current: Some(TurnState::AwaitingApproval),
        }
    }

    /// The current state (`None` before the first provider call).
    pub fn current(&self) -> Option<TurnState> {
        self.current
    }

    /// Moves to `next` during `turn`; returns whether the move was legal.
    pub fn enter(&mut self, turn: usize, next: TurnState) -> bool {
        let legal = match self.current {
            None => next == TurnState::Streaming || next == TurnState::Cancelled,
            Some(current) => current.can_move_to(next),
        };
        if legal {
            tracing::debug!(
                turn,
                from = self.current.map(TurnState::as_str).unwrap_or("start"),
                to = next.as_str(),
                "turn state"
            );
        } else {
            tracing::error!(
                turn,
                from = self.current.map(TurnState::as_str).unwrap_or("start"),
                to = next.as_str(),
                "illegal turn state transition"
            );
        }
        self.current = Some(next);
        legal
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
    fn a_run_waits_from_its_tools_and_resumes_there() {
        use TurnState::*;
        assert!(ToolExecution.can_move_to(AwaitingApproval));
        assert!(!Streaming.can_move_to(AwaitingApproval));
        assert!(AwaitingApproval.can_move_to(ToolExecution));
        assert!(AwaitingApproval.can_move_to(Streaming));
        assert!(AwaitingApproval.can_move_to(Cancelled));
        assert!(!AwaitingApproval.can_move_to(Yielding));
        assert!(!AwaitingApproval.is_terminal());
        assert_eq!(AwaitingApproval.to_string(), "awaiting_approval");
        let mut resumed = TurnTracker::resumed_after_approval();
        assert_eq!(resumed.current(), Some(AwaitingApproval));
        assert!(resumed.enter(3, ToolExecution));
        assert!(resumed.enter(4, Streaming));
        // A fresh tracker still may not start with the tools.
        assert!(!TurnTracker::new().enter(3, ToolExecution));
    }

    #[test]
    fn tracker_follows_every_move() {
        let mut tracker = TurnTracker::new();
        assert_eq!(tracker.current(), None);
        assert!(tracker.enter(1, TurnState::Streaming));
        assert_eq!(tracker.current(), Some(TurnState::Streaming));
        assert!(tracker.enter(1, TurnState::ToolExecution));
        assert_eq!(tracker.current(), Some(TurnState::ToolExecution));
        assert!(tracker.enter(2, TurnState::Streaming));
        assert_eq!(tracker.current(), Some(TurnState::Streaming));
        assert!(tracker.enter(2, TurnState::Yielding));
        assert_eq!(tracker.current(), Some(TurnState::Yielding));
    }

    #[test]
    fn illegal_moves_are_reported_and_still_taken() {
        let mut tracker = TurnTracker::new();
        assert!(!tracker.enter(1, TurnState::ToolExecution));
        assert_eq!(tracker.current(), Some(TurnState::ToolExecution));
        assert!(tracker.enter(1, TurnState::Yielding));
        assert!(!tracker.enter(2, TurnState::Streaming));
        assert_eq!(tracker.current(), Some(TurnState::Streaming));
        let mut cancelled_at_start = TurnTracker::new();
        assert!(cancelled_at_start.enter(0, TurnState::Cancelled));
    }
}
