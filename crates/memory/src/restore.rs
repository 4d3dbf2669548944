//! Rebuilding a conversation a provider accepts from whatever was stored.
//!
//! A session can be stored malformed: a process killed between a tool call and its
//! result, or — before sessions had one writer at a time — two runs interleaving their
//! messages. Restoring repairs every such shape so that no provider request is ever
//! malformed. The invariant after a repair: every assistant message with tool calls is
//! followed immediately by exactly one tool result per call, in call order, and no tool
//! message stands anywhere else.

use std::collections::HashMap;

use oxydra_types::{CallId, Message, MessageRole, ToolCall};

use crate::traits::StoredMessage;

/// The content of the synthetic result given to a tool call that has no stored result.
pub const INTERRUPTED_RESULT: &str =
    "Tool execution failed: interrupted — the session stopped before this call finished";

/// Where a message of the repaired conversation comes from.
#[derive(Debug)]
enum Slot {
    /// A stored message that is not a tool result, at its index.
    Kept(usize),
    /// A stored assistant message (at its index) without the later calls that repeated
    /// the id of an earlier call of the same message.
    Trimmed(usize, Message),
    /// The stored tool result at `index`, answering a call of the assistant message at
    /// `assistant`. `clean` when the whole group (the assistant message and its results)
    /// was stored exactly as it is restored.
    Result {
        index: usize,
        assistant: usize,
        clean: bool,
    },
    /// A synthetic [`INTERRUPTED_RESULT`] for a call of the assistant message at
    /// `assistant` that has no stored result.
    Synthetic { message: Message, assistant: usize },
}

/// A call of an assistant message and the stored result assigned to it.
struct Call {
    call: ToolCall,
    result: Option<usize>,
}

/// An assistant message with tool calls (at `index`) and its calls, ids made unique.
struct Group {
    index: usize,
    calls: Vec<Call>,
    trimmed: bool,
}

/// The repaired order of `messages`, as slots that point into it.
///
/// Each tool result answers the latest earlier assistant call with its id that has no
/// result yet (providers reuse ids like `call_0` in every turn, and interleaved runs
/// repeat each other's ids, so the nearest open call is the one it answers). A tool
/// result that answers no open call — an id no earlier call has, a second result for a
/// call, a tool message without an id — is dropped. Within one assistant message a call
/// repeating an earlier call's id is dropped (with the results it would take). Results
/// are placed right after their assistant message in call order; calls without one get
/// a synthetic [`INTERRUPTED_RESULT`].
fn arrange(messages: &[Message]) -> Vec<Slot> {
    let mut groups: Vec<Group> = Vec::new();
    // For each call id, the groups with that call still open, latest last.
    let mut open: HashMap<&CallId, Vec<(usize, usize)>> = HashMap::new();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut dropped = 0_usize;
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            MessageRole::Assistant if !message.tool_calls.is_empty() => {
                let group = groups.len();
                let mut calls: Vec<Call> = Vec::with_capacity(message.tool_calls.len());
                for call in &message.tool_calls {
                    if calls.iter().any(|kept| kept.call.id == call.id) {
                        continue;
                    }
                    open.entry(&call.id).or_default().push((group, calls.len()));
                    calls.push(Call {
                        call: call.clone(),
                        result: None,
                    });
                }
                let trimmed = calls.len() != message.tool_calls.len();
                groups.push(Group {
                    index,
                    calls,
                    trimmed,
                });
                group_of.insert(index, group);
            }
            MessageRole::Tool => {
                let target = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| open.get_mut(id))
                    .and_then(Vec::pop);
                let slot = target.and_then(|(group, call)| {
                    groups
                        .get_mut(group)
                        .and_then(|group| group.calls.get_mut(call))
                });
                match slot {
                    Some(call) => call.result = Some(index),
                    None => dropped += 1,
                }
            }
            _ => {}
        }
    }

    let mut slots = Vec::with_capacity(messages.len());
    let (mut moved, mut synthesised) = (0_usize, 0_usize);
    for (index, message) in messages.iter().enumerate() {
        if message.role == MessageRole::Tool {
            continue;
        }
        let Some(group) = group_of.get(&index).and_then(|g| groups.get(*g)) else {
            slots.push(Slot::Kept(index));
            continue;
        };
        let clean = !group.trimmed
            && group
                .calls
                .iter()
                .enumerate()
                .all(|(position, call)| call.result == Some(group.index + position + 1));
        if group.trimmed {
            let mut trimmed = message.clone();
            trimmed.tool_calls = group.calls.iter().map(|c| c.call.clone()).collect();
            slots.push(Slot::Trimmed(index, trimmed));
        } else {
            slots.push(Slot::Kept(index));
        }
        for call in &group.calls {
            match call.result {
                Some(result) => {
                    if !clean {
                        moved += 1;
                    }
                    slots.push(Slot::Result {
                        index: result,
                        assistant: index,
                        clean,
                    });
                }
                None => {
                    tracing::info!(call_id = %call.call.id, tool = %call.call.name, "synthesising interrupted tool result");
                    synthesised += 1;
                    slots.push(Slot::Synthetic {
                        message: Message::tool_result(
                            call.call.id.clone(),
                            call.call.name.clone(),
                            INTERRUPTED_RESULT,
                        ),
                        assistant: index,
                    });
                }
            }
        }
    }
    if dropped > 0 || moved > 0 {
        tracing::warn!(
            dropped,
            moved,
            synthesised,
            "restore repaired a malformed session: tool results answering no open call dropped, the rest put right after their call"
        );
    }
    slots
}

/// `messages` repaired so that a provider accepts them: every assistant message with
/// tool calls is followed immediately by exactly one tool result per call, in call
/// order, and no tool message stands anywhere else.
///
/// Each tool result answers the latest earlier call with its id that has no result yet;
/// results answering no open call (unknown ids, second results for one call, tool
/// messages without an id) are dropped, results separated from their call by other
/// messages are moved right after it, a call repeating an earlier call's id within one
/// assistant message is dropped, and calls without a result get a synthetic
/// [`INTERRUPTED_RESULT`]. Messages other than tool results keep their order. A
/// well-formed conversation comes back unchanged.
pub fn repair_sequence(messages: Vec<Message>) -> Vec<Message> {
    let slots = arrange(&messages);
    let mut taken: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let mut take = |index: usize| taken.get_mut(index).and_then(Option::take);
    slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Kept(index) | Slot::Result { index, .. } => take(index),
            Slot::Trimmed(_, message) | Slot::Synthetic { message, .. } => Some(message),
        })
        .collect()
}

/// [`repair_sequence`] on stored messages, keeping each one's sequence number where the
/// order allows: a tool result of a group that had to be repaired (a moved, dropped or
/// synthetic result), and every synthetic result, takes the sequence number and time of
/// its assistant message. The sequence numbers of the result never decrease, and a
/// repaired group shares one number, so a summary boundary never splits it.
pub fn repair_stored(stored: Vec<StoredMessage>) -> Vec<StoredMessage> {
    let messages: Vec<Message> = stored.iter().map(|m| m.message.clone()).collect();
    let slots = arrange(&messages);
    let place = |index: usize| {
        stored
            .get(index)
            .map(|m| (m.sequence, m.created_at_ms))
            .unwrap_or_default()
    };
    let mut taken: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for slot in slots {
        let (message, at) = match slot {
            Slot::Kept(index) => (taken.get_mut(index).and_then(Option::take), index),
            Slot::Trimmed(index, message) => (Some(message), index),
            Slot::Result {
                index,
                assistant,
                clean,
            } => (
                taken.get_mut(index).and_then(Option::take),
                if clean { index } else { assistant },
            ),
            Slot::Synthetic { message, assistant } => (Some(message), assistant),
        };
        if let Some(message) = message {
            let (sequence, created_at_ms) = place(at);
            out.push(StoredMessage {
                sequence,
                message,
                created_at_ms,
            });
        }
    }
    out
}

/// Whether `messages` satisfy the restore invariant: every assistant message with tool
/// calls (each with its own id) is followed immediately by exactly one tool result per
/// call, in call order, and no tool message stands anywhere else.
pub fn is_well_formed(messages: &[Message]) -> bool {
    let mut position = 0;
    while let Some(message) = messages.get(position) {
        position += 1;
        match message.role {
            MessageRole::Tool => return false,
            MessageRole::Assistant => {
                for (index, call) in message.tool_calls.iter().enumerate() {
                    let repeated = message
                        .tool_calls
                        .get(..index)
                        .is_some_and(|earlier| earlier.iter().any(|c| c.id == call.id));
                    if repeated {
                        return false;
                    }
                    let answered = messages.get(position).is_some_and(|result| {
                        result.role == MessageRole::Tool
                            && result.tool_call_id.as_ref() == Some(&call.id)
                    });
                    if !answered {
                        return false;
                    }
                    position += 1;
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests;
