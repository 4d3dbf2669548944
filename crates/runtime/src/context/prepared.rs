//! The prompt sent to the provider, kept up to date incrementally.
//!
//! The request's messages are `header ++ window`: the header is the system prompt, the
//! rolling summary and the retrieved snippets; the window is the part of the live
//! history that fits. Between turns only the new messages are appended and only their
//! tokens are looked at, so preparing a turn costs O(new messages). The window is
//! chosen again (whole groups, see [`super::groups`]) only when the prompt may no
//! longer fit: first by the upper bounds, then by the counts of the window's
//! [`CountMode`] (estimates until the prompt nears its limit, exact counts after).

use std::ops::Range;

use oxydra_provider::ProviderRequest;
use oxydra_types::Message;

use super::budget::{ContextReport, FixedTokens};
use super::groups::{group_ranges, select_window};
use super::history::{Entry, counted_tokens};
use super::message_tokens::{CountMode, MessageTokens, sum_counted};

/// A provider request whose messages follow the session's history.
#[derive(Debug)]
pub(crate) struct PreparedContext {
    /// The request; `request.messages` is `header ++ window`.
    pub request: ProviderRequest,
    header_tokens: Vec<MessageTokens>,
    pinned: Option<Range<usize>>,
    suffix_start: usize,
    end: usize,
    window_upper: u64,
    live_start: usize,
}

impl Default for PreparedContext {
    fn default() -> Self {
        Self {
            request: ProviderRequest::new(String::new(), Vec::new()),
            header_tokens: Vec::new(),
            pinned: None,
            suffix_start: 0,
            end: 0,
            window_upper: 0,
            live_start: 0,
        }
    }
}

impl PreparedContext {
    fn header_len(&self) -> usize {
        self.header_tokens.len()
    }

    /// The header messages.
    pub fn header(&self) -> &[Message] {
        self.request
            .messages
            .get(..self.header_len())
            .unwrap_or_default()
    }

    /// Replaces the header (a no-op when it is unchanged).
    pub fn set_header(&mut self, header: Vec<Message>) {
        if self.header() == header.as_slice() {
            return;
        }
        let old_len = self.header_len();
        self.header_tokens = header.iter().map(MessageTokens::new).collect();
        self.request.messages.splice(..old_len, header);
    }

    /// Empties the window, then puts `pinned` (if any) in it.
    fn reset_window(&mut self, live_start: usize, pinned: Option<Range<usize>>, entries: &[Entry]) {
        let header_len = self.header_len();
        self.request.messages.truncate(header_len);
        self.pinned = None;
        self.suffix_start = live_start;
        self.end = live_start;
        self.window_upper = 0;
        self.live_start = live_start;
        if let Some(pinned) = pinned {
            for entry in entries.get(pinned.clone()).unwrap_or_default() {
                self.push_entry(entry);
            }
            self.pinned = Some(pinned);
        }
    }

    fn push_entry(&mut self, entry: &Entry) {
        self.request.messages.push(entry.message.clone());
        self.window_upper = self
            .window_upper
            .saturating_add(u64::from(entry.tokens.upper()));
    }

    fn window_ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.pinned
            .clone()
            .into_iter()
            .chain(std::iter::once(self.suffix_start..self.end))
    }

    /// The header messages without an exact count yet: their indices and copies.
    pub fn header_uncounted(&self) -> Vec<(usize, Message)> {
        self.header_tokens
            .iter()
            .zip(self.header())
            .enumerate()
            .filter(|(_, (tokens, _))| tokens.cached_exact().is_none())
            .map(|(index, (_, message))| (index, message.clone()))
            .collect()
    }

    /// Takes `exact` as the exact count of header message `index`.
    pub fn seed_header_exact(&mut self, index: usize, exact: u32) {
        if let Some(tokens) = self.header_tokens.get_mut(index) {
            tokens.seed_exact(exact);
        }
    }

    /// Upper bound of the header's tokens.
    pub fn header_upper(&self) -> u64 {
        self.header_tokens
            .iter()
            .map(|t| u64::from(t.upper()))
            .sum()
    }

    /// Estimate of the header's tokens.
    pub fn header_estimate(&self) -> u64 {
        self.header_tokens
            .iter()
            .map(|t| u64::from(t.estimate()))
            .sum()
    }

    /// Tokens of the header under `mode` (exact counts cached per message).
    pub fn header_counted(&mut self, mode: CountMode) -> u64 {
        let header_len = self.header_len();
        let messages = self.request.messages.get(..header_len).unwrap_or_default();
        sum_counted(self.header_tokens.iter_mut().zip(messages), mode)
    }

    /// Tokens under `mode` of the part of the prompt outside the window: the tool
    /// schemas (`fixed`) and the header.
    pub fn fixed_counted(&mut self, fixed: &FixedTokens, mode: CountMode) -> u64 {
        fixed
            .counted(mode)
            .saturating_add(self.header_counted(mode))
    }

    /// Tokens under `mode` of the window's messages (`entries` as last synced).
    fn window_counted(&self, entries: &mut [Entry], mode: CountMode) -> u64 {
        self.window_ranges().fold(0, |total: u64, range| {
            total.saturating_add(counted_tokens(
                entries.get_mut(range).unwrap_or_default(),
                mode,
            ))
        })
    }

    /// Brings the window up to date with `entries` (live from `live_start`), cutting old
    /// groups if the prompt would not fit `available` tokens counted under `mode`.
    /// `fixed` is the tool schemas' cost.
    /// The latest user message is always in the window: when the summary covers it
    /// (`latest_user < live_start`), it goes first, before the live history.
    pub fn sync(
        &mut self,
        entries: &mut [Entry],
        live_start: usize,
        latest_user: Option<usize>,
        fixed: &FixedTokens,
        available: u64,
        mode: CountMode,
    ) -> ContextReport {
        let summarised_user = latest_user
            .filter(|user| *user < live_start && *user < entries.len())
            .map(|user| user..user + 1);
        // A user message pinned by an earlier cut that is no longer the latest one is
        // stale: choose the window again.
        let stale_pin = self
            .pinned
            .as_ref()
            .is_some_and(|pinned| !latest_user.is_some_and(|user| pinned.contains(&user)));
        let missing_pin = summarised_user.is_some() && self.pinned != summarised_user;
        if stale_pin
            || missing_pin
            || live_start != self.live_start
            || self.end > entries.len()
            || self.end < live_start
        {
            self.reset_window(live_start, summarised_user.clone(), entries);
        }
        for entry in entries.get(self.end..).unwrap_or_default() {
            self.push_entry(entry);
        }
        self.end = entries.len();
        let dropped_before = self.dropped(live_start);
        let upper = fixed
            .upper()
            .saturating_add(self.header_upper())
            .saturating_add(self.window_upper);
        if upper <= available {
            return ContextReport {
                tokens: upper,
                exact: false,
                available,
                dropped: dropped_before,
            };
        }
        let is_exact = mode == CountMode::Exact;
        let exact = self.counted(entries, fixed, mode);
        if exact <= available {
            return ContextReport {
                tokens: exact,
                exact: is_exact,
                available,
                dropped: dropped_before,
            };
        }
        // Choose the window again from the whole live history (beside a summarised
        // user message, which is kept whatever it costs).
        let pinned_exact = match &summarised_user {
            Some(range) => counted_tokens(entries.get_mut(range.clone()).unwrap_or_default(), mode),
            None => 0,
        };
        let fixed_exact = self.fixed_counted(fixed, mode).saturating_add(pinned_exact);
        let live = entries.get_mut(live_start..).unwrap_or_default();
        let groups = group_ranges(live.iter().map(|entry| &entry.message));
        let selection = select_window(
            &groups,
            |range| counted_tokens(live.get_mut(range).unwrap_or_default(), mode),
            available.saturating_sub(fixed_exact),
            latest_user.and_then(|user| user.checked_sub(live_start)),
        );
        let pinned = summarised_user.or_else(|| {
            selection
                .pinned
                .map(|range| range.start + live_start..range.end + live_start)
        });
        self.reset_window(live_start, pinned, entries);
        self.suffix_start = selection.suffix_start + live_start;
        self.end = entries.len();
        for entry in entries.get(self.suffix_start..self.end).unwrap_or_default() {
            self.push_entry(entry);
        }
        let tokens = fixed_exact.saturating_add(selection.tokens);
        if tokens > available {
            tracing::warn!(
                tokens,
                available,
                "the newest messages alone exceed the context budget"
            );
        }
        ContextReport {
            tokens,
            exact: is_exact,
            available,
            dropped: selection.dropped,
        }
    }

    /// Tokens under `mode` of the prompt as prepared (tool schemas, header and window).
    pub fn counted(&mut self, entries: &mut [Entry], fixed: &FixedTokens, mode: CountMode) -> u64 {
        self.fixed_counted(fixed, mode)
            .saturating_add(self.window_counted(entries, mode))
    }

    /// Live messages left out of the window.
    fn dropped(&self, live_start: usize) -> usize {
        let pinned_live = self
            .pinned
            .as_ref()
            .filter(|pinned| pinned.start >= live_start)
            .map(|pinned| pinned.len())
            .unwrap_or(0);
        let kept = self.end.saturating_sub(self.suffix_start) + pinned_live;
        self.end.saturating_sub(live_start).saturating_sub(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, MessageRole, ToolCall};

    const EXACT: CountMode = CountMode::Exact;

    fn entry(message: Message, sequence: u64) -> Entry {
        Entry::new(message, sequence)
    }

    fn budget(window: u32) -> u64 {
        u64::from(window)
    }

    #[test]
    fn appends_new_messages_without_counting_when_far_from_the_budget() {
        let fixed = FixedTokens::new(String::new());
        let mut context = PreparedContext::default();
        context.set_header(vec![Message::system("be brief")]);
        let mut entries = vec![entry(Message::user("hi"), 1)];
        let report = context.sync(&mut entries, 0, Some(0), &fixed, budget(10_000), EXACT);
        assert!(!report.exact);
        assert_eq!(context.request.messages.len(), 2);
        entries.push(entry(Message::assistant("hello"), 2));
        context.sync(&mut entries, 0, Some(0), &fixed, budget(10_000), EXACT);
        assert_eq!(context.request.messages.len(), 3);
        assert!(entries.iter().all(|e| e.tokens.cached_exact().is_none()));
        // A new header replaces the old one in place.
        context.set_header(vec![
            Message::system("be brief"),
            Message::system("summary"),
        ]);
        assert_eq!(context.request.messages.len(), 4);
        assert_eq!(context.request.messages[2].role, MessageRole::User);
    }

    #[test]
    fn cuts_whole_groups_when_over_budget() {
        let fixed = FixedTokens::new(String::new());
        let mut context = PreparedContext::default();
        let big = "word ".repeat(200);
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let mut entries = vec![
            entry(Message::user("old question"), 1),
            entry(Message::assistant_with_tool_calls(None, vec![call]), 2),
            entry(
                Message::tool_result(CallId::from("c1"), "file_read", big.clone()),
                3,
            ),
            entry(Message::assistant(big), 4),
            entry(Message::user("new question"), 5),
        ];
        let report = context.sync(&mut entries, 0, Some(4), &fixed, budget(150), EXACT);
        assert!(report.exact);
        assert!(report.tokens <= 150, "{report:?}");
        let roles: Vec<MessageRole> = context.request.messages.iter().map(|m| m.role).collect();
        // The call group (with its big result) and the big answer are gone together.
        assert_eq!(roles, vec![MessageRole::User]);
        assert_eq!(report.dropped, 4);
        // Later turns append to the cut window.
        entries.push(entry(Message::assistant("short"), 6));
        let report = context.sync(&mut entries, 0, Some(4), &fixed, budget(150), EXACT);
        assert_eq!(context.request.messages.len(), 2);
        assert_eq!(report.dropped, 4);
    }

    #[test]
    fn a_new_live_start_rebuilds_the_window() {
        let fixed = FixedTokens::new(String::new());
        let mut context = PreparedContext::default();
        let mut entries: Vec<Entry> = (1..=4)
            .map(|i| entry(Message::user(format!("m{i}")), i))
            .collect();
        context.sync(&mut entries, 0, Some(3), &fixed, budget(10_000), EXACT);
        assert_eq!(context.request.messages.len(), 4);
        context.sync(&mut entries, 2, Some(3), &fixed, budget(10_000), EXACT);
        let texts: Vec<&str> = context.request.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, vec!["m3", "m4"]);
    }

    #[test]
    fn a_summarised_latest_question_stays_first_in_the_window() {
        let fixed = FixedTokens::new(String::new());
        let mut context = PreparedContext::default();
        let call = |id: &str| ToolCall::new(CallId::from(id), "file_read", "{}");
        let mut entries = vec![
            entry(Message::user("the question"), 1),
            entry(
                Message::assistant_with_tool_calls(None, vec![call("c1")]),
                2,
            ),
            entry(
                Message::tool_result(CallId::from("c1"), "file_read", "r1"),
                3,
            ),
            entry(
                Message::assistant_with_tool_calls(None, vec![call("c2")]),
                4,
            ),
            entry(
                Message::tool_result(CallId::from("c2"), "file_read", "r2"),
                5,
            ),
        ];
        context.sync(&mut entries, 0, Some(0), &fixed, budget(10_000), EXACT);
        assert_eq!(context.request.messages.len(), 5);
        // A summary covers the question and the first turn.
        let report = context.sync(&mut entries, 3, Some(0), &fixed, budget(10_000), EXACT);
        let texts: Vec<&str> = context.request.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, vec!["the question", "", "r2"]);
        assert_eq!(report.dropped, 0);
        // New turns are appended after it; a cut keeps it too.
        entries.push(entry(Message::assistant("word ".repeat(200)), 6));
        context.sync(&mut entries, 3, Some(0), &fixed, budget(10_000), EXACT);
        assert_eq!(context.request.messages.len(), 4);
        entries.push(entry(Message::assistant("done"), 7));
        let report = context.sync(&mut entries, 3, Some(0), &fixed, budget(100), EXACT);
        let texts: Vec<&str> = context.request.messages.iter().map(|m| m.text()).collect();
        assert_eq!(texts, vec!["the question", "done"]);
        assert_eq!(report.dropped, 3);
        assert!(report.tokens <= 100, "{report:?}");
        // A new question replaces the pinned one.
        entries.push(entry(Message::user("next"), 8));
        context.sync(&mut entries, 3, Some(7), &fixed, budget(10_000), EXACT);
        assert_eq!(context.request.messages[0].text(), "");
        assert_eq!(context.request.messages.last().unwrap().text(), "next");
    }

    #[test]
    fn a_stale_pinned_question_is_dropped_when_a_new_one_arrives() {
        let fixed = FixedTokens::new(String::new());
        let mut context = PreparedContext::default();
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let mut entries = vec![
            entry(Message::user("old question"), 1),
            entry(Message::assistant("word ".repeat(200)), 2),
            entry(Message::assistant_with_tool_calls(None, vec![call]), 3),
            entry(
                Message::tool_result(CallId::from("c1"), "file_read", "short"),
                4,
            ),
        ];
        context.sync(&mut entries, 0, Some(0), &fixed, budget(100), EXACT);
        let texts: Vec<&str> = context.request.messages.iter().map(|m| m.text()).collect();
        // The big answer is cut; the old question is kept (pinned) beside the newest group.
        assert_eq!(texts, vec!["old question", "", "short"]);
        entries.push(entry(Message::assistant("answer"), 5));
        entries.push(entry(Message::user("new question"), 6));
        let report = context.sync(&mut entries, 0, Some(5), &fixed, budget(100), EXACT);
        let texts: Vec<&str> = context.request.messages.iter().map(|m| m.text()).collect();
        // The window is contiguous again: nothing older than the big answer comes back.
        assert_eq!(texts, vec!["", "short", "answer", "new question"]);
        assert_eq!(report.dropped, 2);
    }
}
