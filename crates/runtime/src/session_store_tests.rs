//! Tests of the session store ([`super`]): loading once, repairing interrupted calls,
//! summary races, sessions without memory and the lease.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use oxydra_memory::{
    IntentStore, LeaseOwner, MemoryError, SessionInfo, SessionLease, SqliteMemory, StoredMessage,
};

/// Memory that counts how often a session's history is read and its lease renewed.
struct CountingMemory {
    inner: SqliteMemory,
    reads: AtomicUsize,
    renewals: AtomicUsize,
}

impl CountingMemory {
    fn new() -> Self {
        Self {
            inner: SqliteMemory::open_in_memory().unwrap(),
            reads: AtomicUsize::new(0),
            renewals: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl IntentStore for CountingMemory {
    async fn store_intent(&self, intent: &oxydra_memory::ToolIntent) -> Result<(), MemoryError> {
        self.inner.store_intent(intent).await
    }
    async fn store_intent_outcome(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &oxydra_memory::IntentOutcome,
    ) -> Result<bool, MemoryError> {
        self.inner.store_intent_outcome(session, key, outcome).await
    }
    async fn intent(
        &self,
        session: &SessionId,
        key: &str,
    ) -> Result<Option<oxydra_memory::StoredIntent>, MemoryError> {
        self.inner.intent(session, key).await
    }
    async fn intents(
        &self,
        session: &SessionId,
    ) -> Result<Vec<oxydra_memory::StoredIntent>, MemoryError> {
        self.inner.intents(session).await
    }
    async fn unfinished_intents(
        &self,
        session: &SessionId,
    ) -> Result<Vec<oxydra_memory::ToolIntent>, MemoryError> {
        self.inner.unfinished_intents(session).await
    }
}

#[async_trait]
impl Memory for CountingMemory {
    async fn append(&self, session: &SessionId, message: &Message) -> Result<u64, MemoryError> {
        self.inner.append(session, message).await
    }
    async fn messages(&self, session: &SessionId) -> Result<Vec<StoredMessage>, MemoryError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.messages(session).await
    }
    async fn restore(&self, session: &SessionId) -> Result<Vec<Message>, MemoryError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.restore(session).await
    }
    async fn session_exists(&self, session: &SessionId) -> Result<bool, MemoryError> {
        self.inner.session_exists(session).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>, MemoryError> {
        self.inner.list_sessions().await
    }
    async fn load_summary(&self, session: &SessionId) -> Result<SessionSummary, MemoryError> {
        self.inner.load_summary(session).await
    }
    async fn store_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        text: &str,
        covers_through: u64,
    ) -> Result<Option<u64>, MemoryError> {
        self.inner
            .store_summary(session, expected_epoch, text, covers_through)
            .await
    }
    async fn store_session_meta(
        &self,
        session: &SessionId,
        meta: &SessionMeta,
    ) -> Result<(), MemoryError> {
        self.inner.store_session_meta(session, meta).await
    }
    async fn session_meta(&self, session: &SessionId) -> Result<Option<SessionMeta>, MemoryError> {
        self.inner.session_meta(session).await
    }
    async fn delete_session(&self, session: &SessionId) -> Result<(), MemoryError> {
        self.inner.delete_session(session).await
    }
    async fn acquire_session_lease(
        &self,
        session: &SessionId,
        owner: &LeaseOwner,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        self.inner.acquire_session_lease(session, owner, ttl).await
    }
    async fn renew_session_lease(
        &self,
        lease: &SessionLease,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        self.inner.renew_session_lease(lease, ttl).await
    }
    async fn release_session_lease(&self, lease: &SessionLease) -> Result<(), MemoryError> {
        self.inner.release_session_lease(lease).await
    }
}

#[tokio::test]
async fn open_reads_the_history_once_and_repairs_interrupted_calls() {
    let memory = Arc::new(CountingMemory::new());
    let session = SessionId::from("ses_once");
    let call = oxydra_types::ToolCall::new(oxydra_types::CallId::from("c1"), "echo", "{}");
    memory.append(&session, &Message::user("go")).await.unwrap();
    memory
        .append(
            &session,
            &Message::assistant_with_tool_calls(None, vec![call]),
        )
        .await
        .unwrap();
    let store = SessionStore::new(Some(memory.clone()), None, LeaseSettings::default());
    let state = store
        .open(&session, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(memory.reads.load(Ordering::SeqCst), 1);
    // The interrupted call got its synthetic result, with the call's sequence.
    let history = state.window.history();
    assert_eq!(history.entries.len(), 3);
    assert_eq!(
        history.entries[2].message.text(),
        oxydra_memory::INTERRUPTED_RESULT
    );
    assert_eq!(history.entries[2].sequence, 2);
    assert_eq!(state.next_sequence, 3);
}

#[tokio::test]
async fn a_lost_summary_race_takes_the_stored_summary() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let store = SessionStore::new(Some(memory.clone()), None, LeaseSettings::default());
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
    assert_eq!(state.window.summary().text.as_deref(), Some("theirs"));
    assert_eq!(state.window.summary().epoch, 1);
    assert_eq!(state.window.history().live_start, 3);
    // With the current epoch the next store wins.
    let kept = store
        .store_summary(&session, &mut state, "ours".into(), 4)
        .await
        .unwrap();
    assert!(kept);
    assert_eq!(memory.load_summary(&session).await.unwrap().epoch, 2);
    assert_eq!(state.window.history().live_start, 4);
}

#[tokio::test]
async fn without_memory_sessions_live_in_the_process() {
    let store = SessionStore::new(None, None, LeaseSettings::default());
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
        store.close(&session, &mut state);
    }
    let state = store.open(&session, &cancel).await.unwrap();
    assert_eq!(state.window.history().entries.len(), 2);
    assert_eq!(state.window.history().live_start, 1);
    drop(state);
    assert_eq!(store.messages(&session).await.unwrap().len(), 2);
    store.forget(&session);
    assert!(store.messages(&session).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_open_session_renews_its_lease_until_released() {
    let memory = Arc::new(CountingMemory::new());
    let settings = LeaseSettings {
        ttl: Duration::from_millis(150),
        wait: Duration::ZERO,
    };
    let store = SessionStore::new(Some(memory.clone()), None, settings);
    let session = SessionId::from("ses_renewed");
    let mut state = store
        .open(&session, &CancellationToken::new())
        .await
        .unwrap();
    // Renewed every third of its time to live while open.
    for _ in 0..1_000 {
        if memory.renewals.load(Ordering::SeqCst) >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(memory.renewals.load(Ordering::SeqCst) >= 3);
    let other = oxydra_memory::LeaseOwner::generate();
    let busy = memory
        .acquire_session_lease(&session, &other, settings.ttl)
        .await;
    assert!(
        matches!(busy, Err(MemoryError::SessionBusy { .. })),
        "{busy:?}"
    );

    // Released: renewing stops (the renewer has ended) and the lease is free.
    state.release().await;
    let renewals = memory.renewals.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(memory.renewals.load(Ordering::SeqCst), renewals);
    memory
        .acquire_session_lease(&session, &other, settings.ttl)
        .await
        .unwrap();
}
