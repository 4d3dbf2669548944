//! Rebuilding a conversation after a crash: no tool call may stay without a result.

use oxydra_types::{Message, MessageRole};

/// The content of the synthetic result given to a tool call that has no stored result.
pub const INTERRUPTED_RESULT: &str =
    "Tool execution failed: interrupted — the session stopped before this call finished";

/// `messages` with a synthetic [`INTERRUPTED_RESULT`] tool message for every tool call
/// left without a result.
///
/// A call's result is a tool message with its id between the assistant message that
/// made the call and the next assistant message (providers reuse ids like `call_0`
/// across turns, so the search stays within the turn). The synthetic results go right
/// after the last stored result of that assistant message's calls — or right after the
/// assistant message when none was stored — in the order the calls were made.
pub fn repair_orphaned_calls(messages: Vec<Message>) -> Vec<Message> {
    let mut inserts: Vec<Vec<Message>> = vec![Vec::new(); messages.len()];
    for (position, message) in messages.iter().enumerate() {
        if message.role != MessageRole::Assistant || message.tool_calls.is_empty() {
            continue;
        }
        let turn = messages
            .iter()
            .enumerate()
            .skip(position + 1)
            .take_while(|(_, m)| m.role != MessageRole::Assistant);
        let mut answered = Vec::new();
        let mut last_result = position;
        for (index, later) in turn {
            let Some(id) = later.tool_call_id.as_ref() else {
                continue;
            };
            if later.role == MessageRole::Tool && message.tool_calls.iter().any(|c| &c.id == id) {
                answered.push(id.clone());
                last_result = index;
            }
        }
        let missing = message
            .tool_calls
            .iter()
            .filter(|call| !answered.contains(&call.id));
        if let Some(slot) = inserts.get_mut(last_result) {
            for call in missing {
                tracing::info!(call_id = %call.id, tool = %call.name, "synthesising interrupted tool result");
                slot.push(Message::tool_result(
                    call.id.clone(),
                    call.name.clone(),
                    INTERRUPTED_RESULT,
                ));
            }
        }
    }
    let extra: usize = inserts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(messages.len() + extra);
    for (message, after) in messages.into_iter().zip(inserts) {
        out.push(message);
        out.extend(after);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interrupted_result_reads_as_a_tool_failure() {
        assert!(INTERRUPTED_RESULT.starts_with(oxydra_types::TOOL_FAILURE_PREFIX));
    }
    use oxydra_types::{CallId, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall::new(CallId::from(id), "file_read", "{}")
    }

    fn result(id: &str) -> Message {
        Message::tool_result(CallId::from(id), "file_read", "ok")
    }

    #[test]
    fn complete_conversation_is_unchanged() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant_with_tool_calls(None, vec![call("a"), call("b")]),
            result("a"),
            result("b"),
            Message::assistant("done"),
        ];
        assert_eq!(repair_orphaned_calls(messages.clone()), messages);
    }

    #[test]
    fn missing_results_go_after_the_last_stored_one() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant_with_tool_calls(None, vec![call("a"), call("b"), call("c")]),
            result("b"),
        ];
        let out = repair_orphaned_calls(messages);
        let ids: Vec<&str> = out
            .iter()
            .filter_map(|m| m.tool_call_id.as_ref().map(CallId::as_str))
            .collect();
        assert_eq!(ids, vec!["b", "a", "c"]);
        assert_eq!(out.len(), 5);
        assert_eq!(out[3].text(), INTERRUPTED_RESULT);
        assert_eq!(out[3].name.as_deref(), Some("file_read"));
    }

    #[test]
    fn reused_ids_in_a_later_turn_do_not_count_as_answers() {
        let messages = vec![
            Message::assistant_with_tool_calls(None, vec![call("call_0")]),
            result("call_0"),
            Message::assistant_with_tool_calls(None, vec![call("call_0")]),
            Message::user("are you there?"),
        ];
        let out = repair_orphaned_calls(messages);
        assert_eq!(out.len(), 5);
        assert_eq!(out[3].role, MessageRole::Tool);
        assert_eq!(out[3].text(), INTERRUPTED_RESULT);
        assert_eq!(out[4].role, MessageRole::User);
    }
}
