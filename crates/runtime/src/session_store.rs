//! Where sessions live: in memory (write-through) or, without memory, in the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use oxydra_memory::{Memory, MemoryRetrieval, SessionSummary};
use oxydra_types::{Message, SessionId};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::error::RuntimeError;
use crate::session_state::SessionState;

type Slot = Arc<tokio::sync::Mutex<SessionState>>;

/// The sessions of a runtime. One run at a time per session: a run holds its session's
/// lock from start to end.
pub(crate) struct SessionStore {
    memory: Option<Arc<dyn Memory>>,
    retrieval: Option<Arc<dyn MemoryRetrieval>>,
    sessions: Mutex<HashMap<SessionId, Slot>>,
}

impl SessionStore {
    pub fn new(
        memory: Option<Arc<dyn Memory>>,
        retrieval: Option<Arc<dyn MemoryRetrieval>>,
    ) -> Self {
        Self {
            memory,
            retrieval,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn retrieval(&self) -> Option<&Arc<dyn MemoryRetrieval>> {
        self.retrieval.as_ref()
    }

    fn slot(&self, session_id: &SessionId) -> Slot {
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        sessions
            .entry(session_id.clone())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(SessionState::new())))
            .clone()
    }

    /// Locks the session (waiting for a run on it to end) and, with memory, loads its
    /// stored conversation and summary.
    pub async fn open(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<OwnedMutexGuard<SessionState>, RuntimeError> {
        let slot = self.slot(session_id);
        let mut guard = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(RuntimeError::Cancelled),
            guard = slot.lock_owned() => guard,
        };
        if let Some(memory) = &self.memory {
            let restored = memory.restore(session_id).await?;
            let stored = memory.messages(session_id).await?;
            let summary = memory.load_summary(session_id).await?;
            *guard = SessionState::from_restored(restored, &stored, summary);
        }
        Ok(guard)
    }

    /// Ends a run: with memory the process copy is dropped (memory has it all).
    pub fn close(&self, state: &mut SessionState) {
        if self.memory.is_some() {
            *state = SessionState::new();
        }
    }

    /// Stores `message` (write-through with memory) and appends it to the session.
    pub async fn append(
        &self,
        session_id: &SessionId,
        state: &mut SessionState,
        message: Message,
    ) -> Result<u64, RuntimeError> {
        let sequence = match &self.memory {
            Some(memory) => memory.append(session_id, &message).await?,
            None => state.next_sequence,
        };
        state.push(message, sequence);
        Ok(sequence)
    }

    /// Indexes `text` for retrieval (best effort: a failure is logged, not fatal).
    pub async fn index_text(&self, session_id: &SessionId, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if let Some(retrieval) = &self.retrieval
            && let Err(error) = retrieval.store_text(Some(session_id), text).await
        {
            tracing::warn!(%error, session_id = %session_id, "could not index text for retrieval");
        }
    }

    /// Stores a new summary covering messages through `covers_through`; with memory the
    /// store is a compare-and-swap on the epoch, and when another writer won, its summary
    /// is loaded instead. Returns whether this summary was the one kept.
    pub async fn store_summary(
        &self,
        session_id: &SessionId,
        state: &mut SessionState,
        text: String,
        covers_through: u64,
    ) -> Result<bool, RuntimeError> {
        match &self.memory {
            Some(memory) => {
                let expected = state.summary.epoch;
                match memory
                    .store_summary(session_id, expected, &text, covers_through)
                    .await?
                {
                    Some(epoch) => {
                        state.apply_summary(SessionSummary {
                            text: Some(text),
                            covers_through,
                            epoch,
                        });
                        Ok(true)
                    }
                    None => {
                        tracing::info!(session_id = %session_id, expected, "summary epoch moved; taking the stored summary");
                        let stored = memory.load_summary(session_id).await?;
                        state.apply_summary(stored);
                        Ok(false)
                    }
                }
            }
            None => {
                let epoch = state.summary.epoch.saturating_add(1);
                state.apply_summary(SessionSummary {
                    text: Some(text),
                    covers_through,
                    epoch,
                });
                Ok(true)
            }
        }
    }

    /// The session's messages (stored ones with memory, else the process copy).
    pub async fn messages(&self, session_id: &SessionId) -> Result<Vec<Message>, RuntimeError> {
        if let Some(memory) = &self.memory {
            let stored = memory.messages(session_id).await?;
            return Ok(stored.into_iter().map(|m| m.message).collect());
        }
        let slot = self.slot(session_id);
        let state = slot.lock().await;
        Ok(state.messages().cloned().collect())
    }

    /// Drops the process copy of a session (memory, if any, keeps it).
    pub fn forget(&self, session_id: &SessionId) {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_memory::SqliteMemory;

    #[tokio::test]
    async fn a_lost_summary_race_takes_the_stored_summary() {
        let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
        let store = SessionStore::new(Some(memory.clone()), None);
        let session = SessionId::from("ses_race");
        let cancel = CancellationToken::new();
        let mut state = store.open(&session, &cancel).await.unwrap();
        for text in ["a", "b", "c", "d"] {
            store
                .append(&session, &mut state, Message::user(text))
                .await
                .unwrap();
        }
        // Another writer stores a summary first.
        assert_eq!(
            memory
                .store_summary(&session, 0, "theirs", 3)
                .await
                .unwrap(),
            Some(1)
        );
        let kept = store
            .store_summary(&session, &mut state, "ours".into(), 2)
            .await
            .unwrap();
        assert!(!kept);
        assert_eq!(state.summary.text.as_deref(), Some("theirs"));
        assert_eq!(state.summary.epoch, 1);
        assert_eq!(state.live_start, 3);
        // With the current epoch the next store wins.
        let kept = store
            .store_summary(&session, &mut state, "ours".into(), 4)
            .await
            .unwrap();
        assert!(kept);
        assert_eq!(memory.load_summary(&session).await.unwrap().epoch, 2);
        assert_eq!(state.live_start, 4);
    }

    #[tokio::test]
    async fn without_memory_sessions_live_in_the_process() {
        let store = SessionStore::new(None, None);
        let session = SessionId::from("ses_local");
        let cancel = CancellationToken::new();
        {
            let mut state = store.open(&session, &cancel).await.unwrap();
            assert_eq!(
                store
                    .append(&session, &mut state, Message::user("a"))
                    .await
                    .unwrap(),
                1
            );
            assert_eq!(
                store
                    .append(&session, &mut state, Message::user("b"))
                    .await
                    .unwrap(),
                2
            );
            assert!(
                store
                    .store_summary(&session, &mut state, "a".into(), 1)
                    .await
                    .unwrap()
            );
            store.close(&mut state);
        }
        let state = store.open(&session, &cancel).await.unwrap();
        assert_eq!(state.entries.len(), 2);
        assert_eq!(state.live_start, 1);
        drop(state);
        assert_eq!(store.messages(&session).await.unwrap().len(), 2);
        store.forget(&session);
        assert!(store.messages(&session).await.unwrap().is_empty());
    }
}
