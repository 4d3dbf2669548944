//! Where sessions live: in memory (write-through) or, without memory, in the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use oxydra_memory::{Memory, MemoryRetrieval, SessionMeta, SessionSummary};
use oxydra_types::{CallId, Message, SessionId};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::context::TokenCache;
use crate::error::RuntimeError;
use crate::session_lease::{self, HeldLease, LeaseSettings};
use crate::session_load::{self, until_cancelled};
use crate::session_state::SessionState;

type Slot = Arc<tokio::sync::Mutex<SessionState>>;

/// The sessions of a runtime. One run at a time per session: a run holds its session's
/// lock from start to end, and with memory also the session's lease, so that runs of
/// other runtimes and processes on the same store are kept out too.
pub(crate) struct SessionStore {
    memory: Option<Arc<dyn Memory>>,
    retrieval: Option<Arc<dyn MemoryRetrieval>>,
    lease: LeaseSettings,
    sessions: Mutex<HashMap<SessionId, Slot>>,
    /// Exact token counts of sessions in memory, kept between runs.
    token_counts: Mutex<TokenCache>,
}

/// A session opened for writing: its state, locked, with memory the lease on it and
/// the meta it was recorded with. Release it with [`OpenSession::release`] when the
/// run ends (dropping it releases the lease on a spawned task).
#[derive(Debug)]
pub(crate) struct OpenSession {
    state: OwnedMutexGuard<SessionState>,
    lease: Option<HeldLease>,
    meta: Option<SessionMeta>,
}

impl OpenSession {
    /// What the session was recorded to run with (`None` without memory, for a new
    /// session, or one stored before metas were recorded).
    pub fn stored_meta(&self) -> Option<&SessionMeta> {
        self.meta.as_ref()
    }

    /// Gives the session's lease up (the state stays locked until this is dropped).
    pub async fn release(&mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release().await;
        }
    }
}

impl std::ops::Deref for OpenSession {
    type Target = SessionState;
    fn deref(&self) -> &SessionState {
        &self.state
    }
}

impl std::ops::DerefMut for OpenSession {
    fn deref_mut(&mut self) -> &mut SessionState {
        &mut self.state
    }
}

impl SessionStore {
    pub fn new(
        memory: Option<Arc<dyn Memory>>,
        retrieval: Option<Arc<dyn MemoryRetrieval>>,
        lease: LeaseSettings,
    ) -> Self {
        Self {
            memory,
            retrieval,
            lease,
            sessions: Mutex::new(HashMap::new()),
            token_counts: Mutex::new(TokenCache::default()),
        }
    }

    fn token_counts(&self) -> MutexGuard<'_, TokenCache> {
        self.token_counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn memory(&self) -> Option<&Arc<dyn Memory>> {
        self.memory.as_ref()
    }

    /// How long a writer waits for the session's lease.
    pub fn lease_wait(&self) -> std::time::Duration {
        self.lease.wait
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

    /// Opens the session for writing: locks it (waiting for a run of this runtime on it
    /// to end) and, with memory, takes its lease (waiting a bounded time for a run
    /// elsewhere to end, then failing with [`RuntimeError::SessionBusy`]) and loads its
    /// stored conversation (read once, repaired as `Memory::restore` repairs it) and
    /// summary, with the exact token counts kept from earlier runs.
    pub async fn open(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<OpenSession, RuntimeError> {
        self.open_awaiting(session_id, cancel, &[]).await
    }

    /// [`open`](Self::open) for a run resumed with decisions on `awaiting` (calls of
    /// the last assistant message that wait for a person): the calls of that message
    /// without a stored result stay without the synthetic `interrupted` result loading
    /// gives them, to run now.
    pub async fn open_awaiting(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
        awaiting: &[CallId],
    ) -> Result<OpenSession, RuntimeError> {
        let slot = self.slot(session_id);
        let guard = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(RuntimeError::Cancelled),
            guard = slot.lock_owned() => guard,
        };
        let Some(memory) = &self.memory else {
            return Ok(OpenSession {
                state: guard,
                lease: None,
                meta: None,
            });
        };
        let lease = session_lease::acquire(memory, session_id, self.lease, cancel).await?;
        // From here the lease is released on every path: dropped with `open` on error.
        let mut open = OpenSession {
            state: guard,
            lease: Some(lease),
            meta: None,
        };
        open.meta = until_cancelled(cancel, memory.session_meta(session_id)).await??;
        let stored = until_cancelled(cancel, memory.messages(session_id)).await??;
        let summary = until_cancelled(cancel, memory.load_summary(session_id)).await??;
        let counts = self.token_counts().take(session_id);
        let (state, reused) = until_cancelled(
            cancel,
            session_load::rebuild(stored, summary, counts, awaiting.to_vec()),
        )
        .await??;
        tracing::debug!(
            messages = state.window.messages().count(),
            reused,
            "session loaded"
        );
        *open.state = state;
        Ok(open)
    }

    /// Stores `results` — the settled results of calls a crash interrupted
    /// ([`crate::interrupted_calls`]) — and loads the session again, so that they stand
    /// right after their calls as every later load reads them. Needs memory (without
    /// it nothing is stored and nothing changes).
    pub async fn store_settled(
        &self,
        session_id: &SessionId,
        open: &mut OpenSession,
        results: Vec<Message>,
        cancel: &CancellationToken,
        awaiting: &[CallId],
    ) -> Result<(), RuntimeError> {
        let Some(memory) = &self.memory else {
            return Ok(());
        };
        until_cancelled(cancel, memory.append_many(session_id, &results)).await??;
        let stored = until_cancelled(cancel, memory.messages(session_id)).await??;
        let summary = until_cancelled(cancel, memory.load_summary(session_id)).await??;
        let counts = open.state.window.exact_counts();
        let (state, _) = until_cancelled(
            cancel,
            session_load::rebuild(stored, summary, counts, awaiting.to_vec()),
        )
        .await??;
        *open.state = state;
        Ok(())
    }

    /// Ends a run: with memory the process copy is dropped (memory has it all) and its
    /// exact token counts are kept for the next run.
    pub fn close(&self, session_id: &SessionId, state: &mut SessionState) {
        if self.memory.is_some() {
            let counts = state.window.exact_counts();
            self.token_counts().put(session_id.clone(), counts);
            *state = SessionState::new();
        }
    }

    /// Records what the session runs with (with memory; nothing to do without).
    pub async fn record_meta(
        &self,
        session_id: &SessionId,
        meta: &SessionMeta,
    ) -> Result<(), RuntimeError> {
        if let Some(memory) = &self.memory {
            memory.store_session_meta(session_id, meta).await?;
        }
        Ok(())
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

    /// Stores `messages` (a tool batch's results, in request order; with memory in one
    /// committed transaction) and appends them to the session.
    pub async fn append_many(
        &self,
        session_id: &SessionId,
        state: &mut SessionState,
        messages: Vec<Message>,
    ) -> Result<(), RuntimeError> {
        if messages.is_empty() {
            return Ok(());
        }
        let sequences = match &self.memory {
            Some(memory) => memory.append_many(session_id, &messages).await?,
            None => (0..messages.len() as u64)
                .map(|offset| state.next_sequence.saturating_add(offset))
                .collect(),
        };
        for (message, sequence) in messages.into_iter().zip(sequences) {
            state.push(message, sequence);
        }
        Ok(())
    }

    /// Indexes `text` for retrieval, best effort: the message is already stored, so a
    /// failure, or no answer within `timeout`, is logged and the run goes on. Stops at
    /// once when `cancel` fires; returns `false` then (the caller ends the run).
    pub async fn index_text(
        &self,
        session_id: &SessionId,
        text: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> bool {
        if text.trim().is_empty() {
            return true;
        }
        let Some(retrieval) = &self.retrieval else {
            return true;
        };
        let store = tokio::time::timeout(timeout, retrieval.store_text(Some(session_id), text));
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                tracing::debug!(session_id = %session_id, "indexing for retrieval cancelled");
                false
            }
            stored = store => {
                match stored {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        tracing::warn!(%error, session_id = %session_id, "could not index text for retrieval");
                    }
                    Err(_) => {
                        tracing::warn!(
                            session_id = %session_id,
                            timeout_ms = timeout.as_millis() as u64,
                            "indexing for retrieval timed out; the text is stored but not indexed"
                        );
                    }
                }
                true
            }
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
                let expected = state.window.summary().epoch;
                match memory
                    .store_summary(session_id, expected, &text, covers_through)
                    .await?
                {
                    Some(epoch) => {
                        state.window.apply_summary(SessionSummary {
                            text: Some(text),
                            covers_through,
                            epoch,
                        });
                        Ok(true)
                    }
                    None => {
                        tracing::info!(session_id = %session_id, expected, "summary epoch moved; taking the stored summary");
                        let stored = memory.load_summary(session_id).await?;
                        state.window.apply_summary(stored);
                        Ok(false)
                    }
                }
            }
            None => {
                let epoch = state.window.summary().epoch.saturating_add(1);
                state.window.apply_summary(SessionSummary {
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
        Ok(state.window.messages().cloned().collect())
    }

    /// Drops the process copy of a session (memory, if any, keeps it).
    pub fn forget(&self, session_id: &SessionId) {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(session_id);
        self.token_counts().forget(session_id);
    }
}

#[cfg(test)]
#[path = "session_store_tests.rs"]
mod tests;
