//! The tool calls a run left waiting for a person: the calls of the conversation's
//! last assistant message that have no result yet. Loading a session gives every call
//! without a result a synthetic `interrupted` one; a run resumed with decisions keeps
//! the calls it decides on open instead, so they can run and get their real result.

use std::collections::HashSet;

use oxydra_memory::StoredMessage;
use oxydra_types::{CallId, Message, MessageRole, ToolCall};

/// The calls of the last assistant message of `messages` without a result after it,
/// in the order the model asked for them (empty when that message has no calls or a
/// user message follows it).
pub(crate) fn unanswered_calls<'a>(messages: impl Iterator<Item = &'a Message>) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut answered: HashSet<&'a CallId> = HashSet::new();
    for message in messages {
        match message.role {
            MessageRole::Assistant => {
                calls.clone_from(&message.tool_calls);
                answered.clear();
            }
            MessageRole::Tool => {
                if let Some(id) = &message.tool_call_id {
                    answered.insert(id);
                }
            }
            _ => {
                calls.clear();
                answered.clear();
            }
        }
    }
    calls.retain(|call| !answered.contains(&call.id));
    calls
}

/// `repaired` (the session as loaded, with synthetic results for calls that had none)
/// without the synthetic results of the last assistant message's calls that had no
/// stored result (`stored`), when `decided` names one of them: a run resumed with
/// decisions runs its waiting calls, and the calls held behind them, in order.
pub(crate) fn keep_open(
    stored: &[StoredMessage],
    mut repaired: Vec<StoredMessage>,
    decided: &[CallId],
) -> Vec<StoredMessage> {
    if decided.is_empty() {
        return repaired;
    }
    let open: HashSet<CallId> = unanswered_calls(stored.iter().map(|m| &m.message))
        .into_iter()
        .map(|call| call.id)
        .collect();
    if !decided.iter().any(|id| open.contains(id)) {
        return repaired;
    }
    let last_assistant = repaired
        .iter()
        .rposition(|m| m.message.role == MessageRole::Assistant)
        .unwrap_or(0);
    let mut index = 0;
    repaired.retain(|m| {
        let after = index > last_assistant;
        index += 1;
        !(after
            && m.message.role == MessageRole::Tool
            && m.message
                .tool_call_id
                .as_ref()
                .is_some_and(|id| open.contains(id)))
    });
    repaired
}

#[cfg(test)]
mod tests {
    use oxydra_memory::repair_stored;

    use super::*;

    fn stored(sequence: u64, message: Message) -> StoredMessage {
        StoredMessage {
            sequence,
            message,
            created_at_ms: 0,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall::new(CallId::from(id), "t", "{}")
    }

    fn ids(calls: &[ToolCall]) -> Vec<&str> {
        calls.iter().map(|call| call.id.as_str()).collect()
    }

    #[test]
    fn only_the_last_assistants_calls_without_a_result_wait() {
        let messages = [
            Message::user("q"),
            Message::assistant_with_tool_calls(None, vec![call("old")]),
            Message::user("again"),
            Message::assistant_with_tool_calls(None, vec![call("a"), call("b"), call("c")]),
            Message::tool_result(CallId::from("a"), "t", "done"),
        ];
        assert_eq!(ids(&unanswered_calls(messages.iter())), ["b", "c"]);
        // A user message after the calls: nothing waits.
        let closed = [
            Message::assistant_with_tool_calls(None, vec![call("a")]),
            Message::user("new question"),
        ];
        assert!(unanswered_calls(closed.iter()).is_empty());
        assert!(unanswered_calls([Message::assistant("answer")].iter()).is_empty());
    }

    #[test]
    fn kept_calls_lose_their_synthetic_result_and_others_keep_it() {
        let history = vec![
            stored(1, Message::user("q")),
            stored(
                2,
                Message::assistant_with_tool_calls(None, vec![call("a"), call("b"), call("c")]),
            ),
            stored(3, Message::tool_result(CallId::from("a"), "t", "done")),
        ];
        let repaired = repair_stored(history.clone());
        assert_eq!(repaired.len(), 5);
        let kept = keep_open(&history, repaired.clone(), &[CallId::from("b")]);
        let messages: Vec<Message> = kept.into_iter().map(|m| m.message).collect();
        // `b` was decided; `c`, held behind it, waits too.
        assert_eq!(ids(&unanswered_calls(messages.iter())), ["b", "c"]);
        assert_eq!(messages.len(), 3);
        // Nothing to keep: unchanged.
        assert_eq!(keep_open(&history, repaired.clone(), &[]), repaired);
        // A decision for no waiting call (`a` has its result) keeps nothing open.
        assert_eq!(
            keep_open(&history, repaired.clone(), &[CallId::from("a")]),
            repaired
        );
    }
}
