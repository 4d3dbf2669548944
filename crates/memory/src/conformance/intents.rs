#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Intents and outcomes of side-effecting calls: stored before the call, read back by
//! another store (another process), the outcome added after, the same key stored
//! again starting over, and everything deleted with its session.

use oxydra_types::{CallId, Message, SessionId};

use super::MemoryBackend;
use crate::{IntentOutcome, IntentStatus, IntentStore, Memory, RetrievalConfig, ToolIntent};

fn intent(session: &SessionId, key: &str, call: &str, at: i64) -> ToolIntent {
    ToolIntent {
        session_id: session.clone(),
        key: key.to_owned(),
        call_id: CallId::from(call),
        tool: "shell_exec".to_owned(),
        args_digest: format!("digest-of-{call}"),
        before: Some("absent ✓".to_owned()),
        created_at_ms: at,
    }
}

fn outcome(status: IntentStatus) -> IntentOutcome {
    IntentOutcome {
        status,
        result_digest: "result-digest".to_owned(),
        finished_at_ms: 1_700_000_000_999,
    }
}

/// An intent stored by one store is read back by another (as after a crash), without
/// an outcome until one is stored; the outcome is kept per key; listing is oldest
/// first and per session; an outcome for an unknown key stores nothing.
pub async fn intents_round_trip_with_their_outcomes<B: MemoryBackend>(backend: &B) {
    let (session, other) = (SessionId::from("ses_intents"), SessionId::from("ses_else"));
    let first = intent(&session, "oxk-1", "call_0", 1_700_000_000_000);
    let second = intent(&session, "oxk-2", "call_0", 1_700_000_000_500);
    {
        let store = backend.open(RetrievalConfig::default());
        store.store_intent(&second).await.unwrap();
        store.store_intent(&first).await.unwrap();
        store
            .store_intent(&intent(&other, "oxk-other", "call_9", 1))
            .await
            .unwrap();
    }
    let store = backend.open(RetrievalConfig::default());
    let read = store.intent(&session, "oxk-1").await.unwrap().unwrap();
    assert_eq!(read.intent, first);
    assert_eq!(read.outcome, None, "no outcome was stored yet");
    // Another session's key is not this session's.
    assert!(store.intent(&session, "oxk-other").await.unwrap().is_none());
    assert!(store.intent(&session, "oxk-none").await.unwrap().is_none());

    assert!(
        store
            .store_intent_outcome(&session, "oxk-1", &outcome(IntentStatus::Completed))
            .await
            .unwrap()
    );
    assert!(
        !store
            .store_intent_outcome(&session, "oxk-none", &outcome(IntentStatus::Failed))
            .await
            .unwrap(),
        "an outcome without its intent stores nothing"
    );
    assert!(
        !store
            .store_intent_outcome(&other, "oxk-1", &outcome(IntentStatus::Failed))
            .await
            .unwrap(),
        "an outcome names its session"
    );
    let again = backend.open(RetrievalConfig::default());
    let listed = again.intents(&session).await.unwrap();
    let keys: Vec<&str> = listed.iter().map(|s| s.intent.key.as_str()).collect();
    assert_eq!(keys, ["oxk-1", "oxk-2"], "oldest first");
    assert_eq!(listed[0].outcome, Some(outcome(IntentStatus::Completed)));
    assert_eq!(listed[1].outcome, None);
    // Only the one without an outcome is unfinished.
    assert_eq!(again.unfinished_intents(&session).await.unwrap(), [second]);
    assert_eq!(again.intents(&other).await.unwrap().len(), 1);
    assert!(
        again
            .intents(&SessionId::from("ses_unknown"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// The same key stored again (the call run again after a crash) replaces the intent
/// and clears its outcome; a failed outcome reads back as failed.
pub async fn an_intent_stored_again_starts_over<B: MemoryBackend>(backend: &B) {
    let store = backend.open(RetrievalConfig::default());
    let session = SessionId::from("ses_again");
    store
        .store_intent(&intent(&session, "oxk-a", "c1", 10))
        .await
        .unwrap();
    store
        .store_intent_outcome(&session, "oxk-a", &outcome(IntentStatus::Failed))
        .await
        .unwrap();
    let failed = store.intent(&session, "oxk-a").await.unwrap().unwrap();
    assert_eq!(failed.outcome.unwrap().status, IntentStatus::Failed);
    assert!(store.unfinished_intents(&session).await.unwrap().is_empty());

    let mut rerun = intent(&session, "oxk-a", "c1", 20);
    rerun.before = None;
    store.store_intent(&rerun).await.unwrap();
    let read = store.intent(&session, "oxk-a").await.unwrap().unwrap();
    assert_eq!(read.intent, rerun);
    assert_eq!(read.outcome, None, "the run again has no outcome yet");
    assert_eq!(store.unfinished_intents(&session).await.unwrap(), [rerun]);
    assert_eq!(store.intents(&session).await.unwrap().len(), 1);
}

/// Deleting a session deletes its intents, and only its own.
pub async fn intents_are_deleted_with_their_session<B: MemoryBackend>(backend: &B) {
    let store = backend.open(RetrievalConfig::default());
    let (session, kept) = (SessionId::from("ses_gone"), SessionId::from("ses_kept"));
    store.append(&session, &Message::user("hi")).await.unwrap();
    store.append(&kept, &Message::user("hi")).await.unwrap();
    store
        .store_intent(&intent(&session, "oxk-g", "c1", 1))
        .await
        .unwrap();
    store
        .store_intent(&intent(&kept, "oxk-k", "c1", 1))
        .await
        .unwrap();
    store.delete_session(&session).await.unwrap();
    assert!(store.intents(&session).await.unwrap().is_empty());
    assert!(store.intent(&session, "oxk-g").await.unwrap().is_none());
    assert_eq!(store.intents(&kept).await.unwrap().len(), 1);
}
