//! Which tool choice each turn of a run sends: a fixed [`ToolChoice`], or a policy
//! that looks at the turn (for example "the first turn must call a tool, then the
//! model decides", which lets a small model start its work with a call).

use std::fmt::Debug;

use oxydra_provider::ToolChoice;

/// What a [`ToolChoicePolicy`] knows about the turn it chooses for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnInfo {
    /// The turn of this run, from 1 (after the turns a run continued elsewhere was
    /// given as [already used](crate::RunRequest::already_used)).
    pub turn: usize,
    /// The tool calls the model made in this run before this turn.
    pub tool_calls_so_far: usize,
}

impl TurnInfo {
    /// Turn `turn` (from 1) after `tool_calls_so_far` calls.
    pub fn new(turn: usize, tool_calls_so_far: usize) -> Self {
        Self {
            turn,
            tool_calls_so_far,
        }
    }
}

/// Picks the tool choice of each turn of a run. Set one per runtime with
/// [`AgentRuntimeBuilder::tool_choice`](crate::AgentRuntimeBuilder::tool_choice) and per
/// run with [`RunRequest::tool_choice`](crate::RunRequest::tool_choice); a
/// [`ToolChoice`] is itself a policy that picks the same choice every turn.
///
/// Turns without tools to offer send no choice the provider sees (the wire formats
/// leave it out), whatever the policy says.
pub trait ToolChoicePolicy: Send + Sync + Debug {
    /// The tool choice of `turn`.
    fn choose(&self, turn: TurnInfo) -> ToolChoice;
}

impl<T: ToolChoicePolicy + ?Sized> ToolChoicePolicy for std::sync::Arc<T> {
    fn choose(&self, turn: TurnInfo) -> ToolChoice {
        self.as_ref().choose(turn)
    }
}

impl ToolChoicePolicy for ToolChoice {
    fn choose(&self, _turn: TurnInfo) -> ToolChoice {
        self.clone()
    }
}

/// One choice until the model has made its first tool call, another after it:
/// `FirstCall { first: Required, then: Auto }` makes a run begin with a call and leaves
/// the rest to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstCall {
    /// The choice while the run has made no tool call yet.
    pub first: ToolChoice,
    /// The choice once it has.
    pub then: ToolChoice,
}

impl FirstCall {
    /// `required` until the first call, then `auto`.
    pub fn required_then_auto() -> Self {
        Self {
            first: ToolChoice::Required,
            then: ToolChoice::Auto,
        }
    }
}

impl ToolChoicePolicy for FirstCall {
    fn choose(&self, turn: TurnInfo) -> ToolChoice {
        if turn.tool_calls_so_far == 0 {
            self.first.clone()
        } else {
            self.then.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_the_same_every_turn() {
        let choice = ToolChoice::Tool("file_read".into());
        for turn in 1..4 {
            assert_eq!(choice.choose(TurnInfo::new(turn, turn * 2)), choice);
        }
    }

    #[test]
    fn first_call_switches_after_the_first_call_not_the_first_turn() {
        let policy = FirstCall::required_then_auto();
        assert_eq!(policy.choose(TurnInfo::new(1, 0)), ToolChoice::Required);
        // A turn that ended without calls (a constraint batch, a retry) keeps it.
        assert_eq!(policy.choose(TurnInfo::new(2, 0)), ToolChoice::Required);
        assert_eq!(policy.choose(TurnInfo::new(2, 1)), ToolChoice::Auto);
        assert_eq!(policy.choose(TurnInfo::new(5, 3)), ToolChoice::Auto);
    }
}
