//! Loading a stored session without holding up an async thread: every wait on memory
//! gives way to cancellation ([`until_cancelled`]), and the work that grows with the
//! history's bytes — repairing it, measuring each message, matching the exact counts
//! kept from earlier runs — runs on a blocking thread ([`rebuild`]).

use oxydra_memory::{MemoryError, SessionSummary, StoredMessage, repair_stored};
use oxydra_types::CallId;
use tokio_util::sync::CancellationToken;

use crate::awaiting_calls;
use crate::context::CachedCount;
use crate::error::RuntimeError;
use crate::session_state::SessionState;

/// `work`'s output, or [`RuntimeError::Cancelled`] as soon as `cancel` fires (`work`
/// is dropped then).
pub(crate) async fn until_cancelled<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = T>,
) -> Result<T, RuntimeError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(RuntimeError::Cancelled),
        output = work => Ok(output),
    }
}

/// The session rebuilt on a blocking thread from its `stored` messages (repaired as
/// `Memory::restore` repairs them, the calls of `awaiting` kept open) and `summary`,
/// every message measured and given its exact count from `counts` where one was kept
/// for it. Returns the state and how many counts were reused.
pub(crate) async fn rebuild(
    stored: Vec<StoredMessage>,
    summary: SessionSummary,
    counts: Vec<CachedCount>,
    awaiting: Vec<CallId>,
) -> Result<(SessionState, usize), RuntimeError> {
    let rebuilt = tokio::task::spawn_blocking(move || {
        let next_sequence = stored.last().map_or(0, |m| m.sequence).saturating_add(1);
        let restored = if awaiting.is_empty() {
            repair_stored(stored)
        } else {
            awaiting_calls::keep_open(&stored, repair_stored(stored.clone()), &awaiting)
        };
        let mut state = SessionState::from_restored(restored, next_sequence, summary);
        let reused = state.window.seed_counts(&counts);
        (state, reused)
    });
    // The blocking task ends without its output only if it panicked: loading failed.
    rebuilt
        .await
        .map_err(|error| MemoryError::Worker(format!("rebuilding the session: {error}")).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::fingerprint;
    use oxydra_types::{Message, ToolCall};

    fn stored(sequence: u64, message: Message) -> StoredMessage {
        StoredMessage {
            sequence,
            message,
            created_at_ms: 0,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_wait_that_never_ends_gives_way_to_cancellation() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let outcome = until_cancelled(&cancel, std::future::pending::<()>()).await;
        assert!(
            matches!(outcome, Err(RuntimeError::Cancelled)),
            "{outcome:?}"
        );
        // Cancellation wins over work that is done already.
        let outcome = until_cancelled(&cancel, std::future::ready(1)).await;
        assert!(
            matches!(outcome, Err(RuntimeError::Cancelled)),
            "{outcome:?}"
        );
        let outcome = until_cancelled(&CancellationToken::new(), std::future::ready(1)).await;
        assert_eq!(outcome.unwrap(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_rebuilt_session_is_repaired_measured_and_given_its_kept_counts() {
        let call = ToolCall::new(CallId::from("c1"), "echo", "{}");
        let question = Message::user("go");
        let messages = vec![
            stored(1, question.clone()),
            stored(2, Message::assistant_with_tool_calls(None, vec![call])),
        ];
        let counts = [
            CachedCount {
                sequence: 1,
                fingerprint: fingerprint(&question),
                exact: 5,
            },
            // Kept for another message under the same sequence: not reused.
            CachedCount {
                sequence: 2,
                fingerprint: fingerprint(&Message::user("other")),
                exact: 7,
            },
        ];
        let (state, reused) = rebuild(
            messages.clone(),
            SessionSummary::default(),
            counts.to_vec(),
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(reused, 1);
        assert_eq!(state.next_sequence, 3);
        let entries = &state.window.history().entries;
        // The interrupted call got its synthetic result.
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[2].message.text(), oxydra_memory::INTERRUPTED_RESULT);
        assert_eq!(entries[0].tokens.cached_exact(), Some(5));
        assert_eq!(entries[1].tokens.cached_exact(), None);
        // The same as rebuilding it in place.
        let in_place = SessionState::from_restored(
            repair_stored(messages.clone()),
            3,
            SessionSummary::default(),
        );
        let in_place = &in_place.window.history().entries;
        for (rebuilt, expected) in entries.iter().zip(in_place) {
            assert_eq!(rebuilt.message, expected.message);
            assert_eq!(rebuilt.sequence, expected.sequence);
            assert_eq!(rebuilt.tokens.upper(), expected.tokens.upper());
            assert_eq!(rebuilt.tokens.estimate(), expected.tokens.estimate());
        }
        // A call awaiting a decision keeps no synthetic result.
        let (state, _) = rebuild(
            messages,
            SessionSummary::default(),
            Vec::new(),
            vec![CallId::from("c1")],
        )
        .await
        .unwrap();
        assert_eq!(state.window.history().entries.len(), 2);
    }
}
