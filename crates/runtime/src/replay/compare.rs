//! The two runs of a replay side by side: [`ReplayReport`], each side's turns and
//! where they first differ.

use oxydra_types::{Message, MessageRole, SessionId};
use serde::Serialize;

use super::recordings::canonical_arguments;

/// One tool call of a turn: the tool and its arguments as canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRecord {
    /// The tool.
    pub name: String,
    /// The arguments, keys sorted ([`super::canonical_json`]).
    pub arguments: String,
}

/// One turn (a prompt and everything until the answer) of one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnRecord {
    /// The turn's number in its session, from 1.
    pub turn: u64,
    /// The calls the model made, in order.
    pub calls: Vec<CallRecord>,
    /// The answer: the turn's last assistant text (`None` when it gave none).
    pub answer: Option<String>,
}

/// What one side did over the replayed turns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSide {
    /// Its session.
    pub session_id: SessionId,
    /// The replayed turns, in order.
    pub turns: Vec<TurnRecord>,
    /// How many tool calls they made.
    pub calls: usize,
    /// Input tokens (`None`: not recorded; an answer stored before its use was
    /// recorded with it).
    pub input_tokens: Option<u64>,
    /// Output tokens (`None`: not recorded).
    pub output_tokens: Option<u64>,
    /// Cost in dollars (`None`: not recorded).
    pub cost: Option<f64>,
}

/// What differs first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// The `index`th call (from 0) is to another tool, or only one side made it.
    DifferentCall {
        /// The call's position in the turn, from 0.
        index: usize,
        /// The original's tool (`None`: it made no such call).
        original: Option<String>,
        /// The replay's tool (`None`: it made no such call).
        replay: Option<String>,
    },
    /// The `index`th call is to the same tool with other arguments.
    DifferentArguments {
        /// The call's position in the turn, from 0.
        index: usize,
        /// The tool.
        name: String,
        /// The original's arguments (canonical JSON).
        original: String,
        /// The replay's arguments (canonical JSON).
        replay: String,
    },
    /// The same calls, another answer.
    DifferentAnswer {
        /// The original's answer.
        original: Option<String>,
        /// The replay's answer.
        replay: Option<String>,
    },
    /// Only one side has this turn (a run that stopped early).
    MissingTurn {
        /// Whether the original has it (else the replay has it).
        in_original: bool,
    },
}

/// Where the runs first differ: the turn and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirstDifference {
    /// The turn's number, from 1.
    pub turn: u64,
    /// What differs.
    #[serde(flatten)]
    pub what: Difference,
}

/// The outcome of a replay: both sides and where they first differ (`None`: the
/// replay reproduced the original's calls and answers exactly).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The first replayed turn, from 1.
    pub from_turn: u64,
    /// The recorded session.
    pub original: RunSide,
    /// The new session.
    pub replay: RunSide,
    /// Where they first differ.
    pub first_difference: Option<FirstDifference>,
    /// Calls of the replay that no recording matched (refused, or run live).
    pub unrecorded_calls: usize,
}

impl ReplayReport {
    /// Whether the replay made the same calls and gave the same answers.
    pub fn identical(&self) -> bool {
        self.first_difference.is_none()
    }
}

/// The turns of `messages` numbered from 1, those before `from` left out.
pub fn turns(messages: &[Message], from: u64) -> Vec<TurnRecord> {
    let mut turns: Vec<TurnRecord> = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::User => {
                let turn = turns.last().map_or(1, |last| last.turn.saturating_add(1));
                turns.push(TurnRecord {
                    turn,
                    calls: Vec::new(),
                    answer: None,
                });
            }
            MessageRole::Assistant => {
                let Some(current) = turns.last_mut() else {
                    continue;
                };
                current
                    .calls
                    .extend(message.tool_calls.iter().map(|call| CallRecord {
                        name: call.name.clone(),
                        arguments: canonical_arguments(&call.arguments),
                    }));
                if let Some(text) = message.content.as_ref().filter(|t| !t.trim().is_empty()) {
                    current.answer = Some(text.clone());
                }
            }
            _ => {}
        }
    }
    turns.retain(|turn| turn.turn >= from);
    turns
}

/// Where `replay` first differs from `original`, turn by turn.
pub fn first_difference(original: &[TurnRecord], replay: &[TurnRecord]) -> Option<FirstDifference> {
    let longest = original.len().max(replay.len());
    (0..longest).find_map(|index| match (original.get(index), replay.get(index)) {
        (Some(before), Some(after)) => differs(before, after).map(|what| FirstDifference {
            turn: before.turn,
            what,
        }),
        (Some(only), None) | (None, Some(only)) => Some(FirstDifference {
            turn: only.turn,
            what: Difference::MissingTurn {
                in_original: original.get(index).is_some(),
            },
        }),
        (None, None) => None,
    })
}

fn differs(original: &TurnRecord, replay: &TurnRecord) -> Option<Difference> {
    let longest = original.calls.len().max(replay.calls.len());
    for index in 0..longest {
        match (original.calls.get(index), replay.calls.get(index)) {
            (Some(a), Some(b)) if a.name != b.name => {
                return Some(Difference::DifferentCall {
                    index,
                    original: Some(a.name.clone()),
                    replay: Some(b.name.clone()),
                });
            }
            (Some(a), Some(b)) if a.arguments != b.arguments => {
                return Some(Difference::DifferentArguments {
                    index,
                    name: a.name.clone(),
                    original: a.arguments.clone(),
                    replay: b.arguments.clone(),
                });
            }
            (Some(_), Some(_)) | (None, None) => {}
            (a, b) => {
                return Some(Difference::DifferentCall {
                    index,
                    original: a.map(|call| call.name.clone()),
                    replay: b.map(|call| call.name.clone()),
                });
            }
        }
    }
    (original.answer != replay.answer).then(|| Difference::DifferentAnswer {
        original: original.answer.clone(),
        replay: replay.answer.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, ToolCall};

    fn turn(calls: &[(&str, &str)], answer: &str) -> Vec<Message> {
        let mut messages = vec![Message::user("do it")];
        for (index, (name, args)) in calls.iter().enumerate() {
            let id = CallId::from(format!("c{index}"));
            messages.push(Message::assistant_with_tool_calls(
                None,
                vec![ToolCall::new(id.clone(), *name, *args)],
            ));
            messages.push(Message::tool_result(id, *name, "ok"));
        }
        messages.push(Message::assistant(answer));
        messages
    }

    #[test]
    fn the_same_calls_in_another_key_order_and_answers_are_identical() {
        let original = turn(&[("file_write", r#"{"path":"a","content":"x"}"#)], "done");
        let replay = turn(&[("file_write", r#"{"content":"x","path":"a"}"#)], "done");
        assert_eq!(
            first_difference(&turns(&original, 1), &turns(&replay, 1)),
            None
        );
    }

    #[test]
    fn each_kind_of_difference_is_found_at_its_turn() {
        let mut original = turn(&[("file_read", r#"{"path":"a"}"#)], "same");
        original.extend(turn(&[("file_read", r#"{"path":"a"}"#)], "A"));
        let mut other_args = turn(&[("file_read", r#"{"path":"a"}"#)], "same");
        other_args.extend(turn(&[("file_read", r#"{"path":"b"}"#)], "A"));
        let found = first_difference(&turns(&original, 1), &turns(&other_args, 1)).unwrap();
        assert_eq!(found.turn, 2);
        assert!(matches!(
            found.what,
            Difference::DifferentArguments { index: 0, .. }
        ));

        let mut other_tool = turn(&[("shell_exec", r#"{"path":"a"}"#)], "same");
        other_tool.extend(turn(&[], "A"));
        let found = first_difference(&turns(&original, 1), &turns(&other_tool, 1)).unwrap();
        assert_eq!(found.turn, 1);
        assert!(matches!(
            found.what,
            Difference::DifferentCall { index: 0, .. }
        ));

        let mut other_answer = turn(&[("file_read", r#"{"path":"a"}"#)], "same");
        other_answer.extend(turn(&[("file_read", r#"{"path":"a"}"#)], "B"));
        let found = first_difference(&turns(&original, 1), &turns(&other_answer, 1)).unwrap();
        assert_eq!(
            found,
            FirstDifference {
                turn: 2,
                what: Difference::DifferentAnswer {
                    original: Some("A".into()),
                    replay: Some("B".into())
                }
            }
        );
        // Compared from turn 2 only, the first turn's difference does not count.
        let found = first_difference(&turns(&original, 2), &turns(&other_tool, 2)).unwrap();
        assert_eq!(found.turn, 2);
    }

    #[test]
    fn a_missing_call_or_turn_is_a_difference() {
        let original = turn(&[("file_read", r#"{"path":"a"}"#)], "x");
        let fewer = turn(&[], "x");
        let found = first_difference(&turns(&original, 1), &turns(&fewer, 1)).unwrap();
        assert_eq!(
            found.what,
            Difference::DifferentCall {
                index: 0,
                original: Some("file_read".into()),
                replay: None
            }
        );
        let found = first_difference(&turns(&original, 1), &[]).unwrap();
        assert_eq!(found.what, Difference::MissingTurn { in_original: true });
    }
}
