//! A session as the runtime holds it while a run is going on: its context window and
//! the next sequence number to store under.

use oxydra_executor::ProvenanceLedger;
use oxydra_memory::{SessionSummary, StoredMessage};
use oxydra_types::Message;

use crate::context::ContextWindow;

/// The session's context window and where its stored sequence continues.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// The messages as the model sees them, the summary and the prepared request.
    pub window: ContextWindow,
    /// The next sequence number when the runtime keeps the session in process.
    pub next_sequence: u64,
    /// The sources of the messages read since a person last approved a held call
    /// (DESIGN.md §3.13). A session restored from memory counts every source of its
    /// stored messages: whether a person decided since is not stored, so the hold
    /// errs on the side of asking once more.
    pub provenance: ProvenanceLedger,
}

impl SessionState {
    /// An empty session.
    pub fn new() -> Self {
        Self {
            next_sequence: 1,
            ..Self::default()
        }
    }

    /// A session rebuilt from memory: `restored` are the stored messages repaired by
    /// `repair_stored` (as `Memory::restore` gives them), each with the sequence number
    /// it is counted under; `next_sequence` follows the last stored message.
    pub fn from_restored(
        restored: Vec<StoredMessage>,
        next_sequence: u64,
        summary: SessionSummary,
    ) -> Self {
        let mut state = Self::new();
        for stored in restored {
            state.push(stored.message, stored.sequence);
        }
        state.next_sequence = next_sequence;
        state.window.apply_summary(summary);
        state
    }

    /// Appends a message that has been stored as `sequence`.
    /// Each of its sources ([`Message::sources`]) is recorded in
    /// [`SessionState::provenance`].
    pub fn push(&mut self, message: Message, sequence: u64) {
        self.next_sequence = self.next_sequence.max(sequence.saturating_add(1));
        for source in message.sources() {
            self.provenance.record(source);
        }
        self.window.push(message, sequence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::{CallId, ToolCall};

    fn stored(sequence: u64, message: Message) -> StoredMessage {
        StoredMessage {
            sequence,
            message,
            created_at_ms: 0,
        }
    }

    #[test]
    fn restore_aligns_sequences_and_synthetic_results() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let stored_messages = vec![
            stored(1, Message::user("q")),
            stored(2, Message::assistant_with_tool_calls(None, vec![call])),
            stored(3, Message::user("again")),
        ];
        let restored = oxydra_memory::repair_stored(stored_messages);
        let state = SessionState::from_restored(restored, 4, SessionSummary::default());
        let history = state.window.history();
        let sequences: Vec<u64> = history.entries.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, vec![1, 2, 2, 3]);
        assert_eq!(
            history.entries[2].message.text(),
            oxydra_memory::INTERRUPTED_RESULT
        );
        assert_eq!(state.next_sequence, 4);
        assert_eq!(history.latest_user, Some(3));
        assert_eq!(history.live_start, 0);
    }
}
