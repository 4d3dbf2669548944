//! The session's messages with their token costs, and the rolling summary's share of
//! them: entries the summary covers have left the live history.

use oxydra_memory::SessionSummary;
use oxydra_types::{Message, MessageRole};

use super::count_cache::{CachedCount, fingerprint};
use super::message_tokens::{CountMode, MessageTokens, sum_counted};

/// A message of the session with its stored sequence number and cached token counts.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The message.
    pub message: Message,
    /// Its sequence number in memory (a synthetic restore result carries the number of
    /// the stored message before it).
    pub sequence: u64,
    /// Its token cost.
    pub tokens: MessageTokens,
    /// The message's [`fingerprint`] when it was computed beside its exact count (off
    /// the async threads), so that keeping the count costs nothing later.
    pub fingerprint: Option<u64>,
}

impl Entry {
    /// `message`, stored as `sequence`, with its upper bound and estimate.
    pub fn new(message: Message, sequence: u64) -> Self {
        Self {
            tokens: MessageTokens::new(&message),
            message,
            sequence,
            fingerprint: None,
        }
    }
}

/// The tokens of `entries` under `mode` (each exact count computed once and kept with
/// its entry).
pub(crate) fn counted_tokens(entries: &mut [Entry], mode: CountMode) -> u64 {
    sum_counted(
        entries
            .iter_mut()
            .map(|entry| (&mut entry.tokens, &entry.message)),
        mode,
    )
}

/// The session's messages as the model sees them: every entry, the rolling summary
/// that covers the oldest ones, and the running token totals of the rest.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// Every message, oldest first.
    pub entries: Vec<Entry>,
    /// The rolling summary; entries with `sequence <= covers_through` are in it.
    pub summary: SessionSummary,
    /// Index of the first entry not condensed into the summary.
    pub live_start: usize,
    /// Upper bound of the tokens of `entries[live_start..]`.
    pub live_upper: u64,
    /// Estimate of the tokens of `entries[live_start..]`.
    pub live_estimate: u64,
    /// Index of the latest user message.
    pub latest_user: Option<usize>,
}

impl History {
    /// Appends a message that has been stored as `sequence`.
    pub fn push(&mut self, message: Message, sequence: u64) {
        if message.role == MessageRole::User {
            self.latest_user = Some(self.entries.len());
        }
        let entry = Entry::new(message, sequence);
        self.live_upper = self
            .live_upper
            .saturating_add(u64::from(entry.tokens.upper()));
        self.live_estimate = self
            .live_estimate
            .saturating_add(u64::from(entry.tokens.estimate()));
        self.entries.push(entry);
    }

    /// Takes `summary` as the session's summary: entries it covers leave the live history.
    pub fn apply_summary(&mut self, summary: SessionSummary) {
        let live_start = if summary.text.is_some() {
            self.entries
                .iter()
                .position(|entry| entry.sequence > summary.covers_through)
                .unwrap_or(self.entries.len())
        } else {
            0
        };
        self.summary = summary;
        self.live_start = live_start;
        let live = self.entries.get(live_start..).unwrap_or_default();
        self.live_upper = live
            .iter()
            .map(|entry| u64::from(entry.tokens.upper()))
            .sum();
        self.live_estimate = live
            .iter()
            .map(|entry| u64::from(entry.tokens.estimate()))
            .sum();
    }

    /// The latest user message when the summary covers it: it stays in the prompt
    /// verbatim (pinned before the live history) while it is the latest.
    pub fn pinned_user(&self) -> Option<usize> {
        self.latest_user.filter(|user| *user < self.live_start)
    }

    /// Upper bound of the tokens of the history the prompt is built from: the live
    /// history and a pinned user message.
    pub fn history_upper(&self) -> u64 {
        let pinned = self
            .pinned_user()
            .and_then(|user| self.entries.get(user))
            .map(|entry| u64::from(entry.tokens.upper()))
            .unwrap_or(0);
        self.live_upper.saturating_add(pinned)
    }

    /// Estimate of the tokens of the history the prompt is built from (see
    /// [`Self::history_upper`]).
    pub fn history_estimate(&self) -> u64 {
        let pinned = self
            .pinned_user()
            .and_then(|user| self.entries.get(user))
            .map(|entry| u64::from(entry.tokens.estimate()))
            .unwrap_or(0);
        self.live_estimate.saturating_add(pinned)
    }

    /// Tokens of the history the prompt is built from (see [`Self::history_upper`])
    /// under `mode`.
    pub fn history_counted(&mut self, mode: CountMode) -> u64 {
        if mode == CountMode::Estimate {
            return self.history_estimate();
        }
        let pinned = match self.pinned_user() {
            Some(user) => {
                counted_tokens(self.entries.get_mut(user..=user).unwrap_or_default(), mode)
            }
            None => 0,
        };
        self.live_exact().saturating_add(pinned)
    }

    /// The entries budgeting counts (the live history and a pinned user message)
    /// without an exact count yet: their indices and copies of their messages.
    pub fn uncounted(&self) -> Vec<(usize, Message)> {
        self.pinned_user()
            .into_iter()
            .chain(self.live_start..self.entries.len())
            .filter_map(|index| {
                let entry = self.entries.get(index)?;
                entry
                    .tokens
                    .cached_exact()
                    .is_none()
                    .then(|| (index, entry.message.clone()))
            })
            .collect()
    }

    /// Takes `exact` as the exact count of entry `index`, and `print` as its message's
    /// [`fingerprint`] (both computed off the async threads).
    pub fn seed_exact(&mut self, index: usize, exact: u32, print: u64) {
        if let Some(entry) = self.entries.get_mut(index) {
            entry.tokens.seed_exact(exact);
            entry.fingerprint = Some(print);
        }
    }

    /// The exact tokens of the live history (counts computed once per message).
    pub fn live_exact(&mut self) -> u64 {
        let start = self.live_start;
        counted_tokens(
            self.entries.get_mut(start..).unwrap_or_default(),
            CountMode::Exact,
        )
    }

    /// Gives entries the exact counts of `cached` (in sequence order) computed earlier
    /// for the same messages; returns how many were reused.
    pub fn seed_counts(&mut self, cached: &[CachedCount]) -> usize {
        if cached.is_empty() {
            return 0;
        }
        let mut reused = 0;
        for entry in &mut self.entries {
            let first = cached.partition_point(|count| count.sequence < entry.sequence);
            let candidates = cached
                .get(first..)
                .unwrap_or_default()
                .iter()
                .take_while(|count| count.sequence == entry.sequence);
            let mut print = None;
            for count in candidates {
                let print = *print.get_or_insert_with(|| fingerprint(&entry.message));
                if count.fingerprint == print {
                    entry.tokens.seed_exact(count.exact);
                    entry.fingerprint = Some(print);
                    reused += 1;
                    break;
                }
            }
        }
        reused
    }

    /// The exact counts computed so far, in sequence order, to keep for the next run.
    /// Fingerprints computed beside the counts are reused: the messages are hashed here
    /// only for counts computed otherwise.
    pub fn exact_counts(&self) -> Vec<CachedCount> {
        self.entries
            .iter()
            .filter_map(|entry| {
                entry.tokens.cached_exact().map(|exact| CachedCount {
                    sequence: entry.sequence,
                    fingerprint: entry
                        .fingerprint
                        .unwrap_or_else(|| fingerprint(&entry.message)),
                    exact,
                })
            })
            .collect()
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().map(|entry| &entry.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, ToolCall};

    #[test]
    fn exact_counts_are_reused_only_for_the_same_message() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let mut state = History::default();
        state.push(Message::user("what is in the file?"), 1);
        state.push(Message::assistant_with_tool_calls(None, vec![call]), 2);
        state.push(
            Message::tool_result(CallId::from("c1"), "file_read", "interrupted"),
            2,
        );
        state.push(Message::assistant("nothing"), 3);
        state.live_exact();
        let counts = state.exact_counts();
        assert_eq!(counts.len(), 4);

        let mut again = History::default();
        for entry in &state.entries {
            again.push(entry.message.clone(), entry.sequence);
        }
        // The same sequence number holding another message is counted afresh.
        again.entries[3] = Entry::new(Message::assistant("something else"), 3);
        assert_eq!(again.seed_counts(&counts), 3);
        for index in 0..3 {
            assert_eq!(
                again.entries[index].tokens.cached_exact(),
                state.entries[index].tokens.cached_exact()
            );
        }
        assert_eq!(again.entries[3].tokens.cached_exact(), None);
    }

    #[test]
    fn summary_moves_the_live_start_past_covered_messages() {
        let mut state = History::default();
        for (sequence, text) in [(1, "a"), (2, "b"), (3, "c")] {
            state.push(Message::user(text), sequence);
        }
        let before = state.live_upper;
        state.apply_summary(SessionSummary {
            text: Some("a and b".into()),
            covers_through: 2,
            epoch: 1,
        });
        assert_eq!(state.live_start, 2);
        assert!(state.live_upper < before);
        assert_eq!(state.live_upper, u64::from(state.entries[2].tokens.upper()));
        assert_eq!(
            state.live_estimate,
            u64::from(state.entries[2].tokens.estimate())
        );
        assert!(state.live_exact() <= state.live_upper);
    }
}
