//! Cutting the history to fit the context budget without breaking tool-call groups.
//!
//! The history is split into groups: a user message alone, an assistant message alone,
//! or an assistant message that calls tools together with the tool results that follow
//! it. Groups are kept or dropped whole, so a tool call is never sent without its
//! result (providers reject that). The window is filled newest group first; the newest
//! group and the group holding the latest user message are always kept.

use std::ops::Range;

use oxydra_types::{Message, MessageRole};

/// Splits `messages` into groups (ranges of indices into `messages`, in order).
pub fn group_ranges<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Range<usize>> {
    let mut groups: Vec<Range<usize>> = Vec::new();
    for (index, message) in messages.into_iter().enumerate() {
        let joins_previous = message.role == MessageRole::Tool;
        match groups.last_mut() {
            Some(last) if joins_previous => last.end = index + 1,
            _ => groups.push(index..index + 1),
        }
    }
    groups
}

/// Which messages a window keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowSelection {
    /// The group of the latest user message when it lies before `suffix_start` (kept
    /// although older groups beside it were dropped).
    pub pinned: Option<Range<usize>>,
    /// Messages from here to the end are kept.
    pub suffix_start: usize,
    /// Tokens of the kept messages.
    pub tokens: u64,
    /// How many messages were left out.
    pub dropped: usize,
}

/// Chooses the newest groups whose tokens fit `available`.
///
/// `cost(range)` gives the tokens of a group; `latest_user` is the index of the latest
/// user message, whose group is always kept, as is the newest group (so the window may
/// exceed `available` when those two alone do).
pub fn select_window(
    groups: &[Range<usize>],
    mut cost: impl FnMut(Range<usize>) -> u64,
    available: u64,
    latest_user: Option<usize>,
) -> WindowSelection {
    let total_messages = groups.last().map(|g| g.end).unwrap_or(0);
    let pinned_group = latest_user.and_then(|user| groups.iter().position(|g| g.contains(&user)));
    let costs: Vec<u64> = groups.iter().map(|g| cost(g.clone())).collect();
    let pinned_cost = pinned_group
        .and_then(|index| costs.get(index).copied())
        .unwrap_or(0);
    let mut remaining = available.saturating_sub(pinned_cost);
    let mut used = pinned_cost;
    let mut first_kept = groups.len();
    for index in (0..groups.len()).rev() {
        let group_cost = costs.get(index).copied().unwrap_or(0);
        let newest = index + 1 == groups.len();
        if Some(index) == pinned_group {
            first_kept = index;
            continue;
        }
        if newest || group_cost <= remaining {
            remaining = remaining.saturating_sub(group_cost);
            used = used.saturating_add(group_cost);
            first_kept = index;
        } else {
            break;
        }
    }
    let suffix_start = groups
        .get(first_kept)
        .map(|g| g.start)
        .unwrap_or(total_messages);
    let pinned = pinned_group
        .filter(|index| *index < first_kept)
        .and_then(|index| groups.get(index).cloned());
    let kept = total_messages - suffix_start + pinned.as_ref().map(|p| p.len()).unwrap_or(0);
    WindowSelection {
        pinned,
        suffix_start,
        tokens: used,
        dropped: total_messages - kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall::new(CallId::from(id), "file_read", "{}")
    }

    fn history() -> Vec<Message> {
        vec![
            Message::user("first question"), // 0
            Message::assistant_with_tool_calls(None, vec![call("a"), call("b")]), // 1
            Message::tool_result(CallId::from("a"), "file_read", "A"), // 2
            Message::tool_result(CallId::from("b"), "file_read", "B"), // 3
            Message::assistant("first answer"), // 4
            Message::user("second question"), // 5
            Message::assistant_with_tool_calls(None, vec![call("c")]), // 6
            Message::tool_result(CallId::from("c"), "file_read", "C"), // 7
        ]
    }

    #[test]
    fn groups_keep_calls_with_their_results() {
        let groups = group_ranges(&history());
        assert_eq!(groups, vec![0..1, 1..4, 4..5, 5..6, 6..8]);
    }

    #[test]
    fn truncation_drops_whole_groups_from_the_oldest_end() {
        let messages = history();
        let groups = group_ranges(&messages);
        // Every message costs 10 tokens.
        let cost = |r: Range<usize>| (r.len() as u64) * 10;
        // Room for 4 messages: groups 6..8 (20) and 5..6 (10) and 4..5 (10); 1..4 (30) no longer fits.
        let selection = select_window(&groups, cost, 40, Some(5));
        assert_eq!(selection.suffix_start, 4);
        assert_eq!(selection.pinned, None);
        assert_eq!(selection.tokens, 40);
        assert_eq!(selection.dropped, 4);
        // 35 tokens: the call group 1..4 can never be cut in half.
        let selection = select_window(&groups, cost, 35, Some(5));
        assert_eq!(selection.suffix_start, 5);
        assert_ne!(messages[selection.suffix_start].role, MessageRole::Tool);
    }

    #[test]
    fn the_latest_user_message_is_always_kept() {
        let mut messages = history();
        // A long tool turn after the latest user message.
        messages.push(Message::assistant_with_tool_calls(None, vec![call("d")]));
        messages.push(Message::tool_result(CallId::from("d"), "file_read", "D"));
        let groups = group_ranges(&messages);
        let cost = |r: Range<usize>| (r.len() as u64) * 10;
        let selection = select_window(&groups, cost, 30, Some(5));
        // Newest group 8..10 (20) + pinned user 5..6 (10); 6..8 does not fit.
        assert_eq!(selection.suffix_start, 8);
        assert_eq!(selection.pinned, Some(5..6));
        assert_eq!(selection.tokens, 30);
        assert_eq!(selection.dropped, 7);
    }

    #[test]
    fn the_newest_group_is_kept_even_when_too_big() {
        let messages = history();
        let groups = group_ranges(&messages);
        let selection = select_window(&groups, |r| (r.len() as u64) * 100, 10, Some(5));
        assert_eq!(selection.suffix_start, 5);
        assert_eq!(selection.pinned, None);
        assert_eq!(selection.tokens, 300);
        let empty = select_window(&[], |_| 0, 10, None);
        assert_eq!(empty.suffix_start, 0);
        assert_eq!(empty.dropped, 0);
    }

    #[test]
    fn everything_fits_when_the_budget_allows() {
        let messages = history();
        let groups = group_ranges(&messages);
        let selection = select_window(&groups, |r| r.len() as u64, 1_000, Some(5));
        assert_eq!(selection.suffix_start, 0);
        assert_eq!(selection.dropped, 0);
        assert_eq!(selection.tokens, 8);
    }
}
