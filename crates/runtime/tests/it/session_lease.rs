//! One writer per session: runtimes sharing a database file (as two processes do)
//! never interleave their runs on one session.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory, is_well_formed};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{AgentRuntime, CollectingEventSink, RuntimeError};
use oxydra_types::{Message, RuntimeEvent, SessionId};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A runtime with the echo tool on its own store of the database at `path`.
fn runtime_on(
    path: &std::path::Path,
    provider: Arc<ScriptedProvider>,
    wait: Duration,
) -> (AgentRuntime, Arc<CollectingEventSink>) {
    let memory = Arc::new(SqliteMemory::open(path, SqliteConfig::default()).unwrap());
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .memory(memory)
        .session_wait(wait)
        .build()
        .unwrap();
    (runtime, events)
}

/// Waits (polling, bounded) until `provider` has been asked `count` times.
async fn wait_for_requests(provider: &ScriptedProvider, count: usize) {
    for _ in 0..6_000 {
        if provider.requests().len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the provider was not asked {count} times");
}

async fn stored(path: &std::path::Path, session: &SessionId) -> Vec<Message> {
    let memory = SqliteMemory::open(path, SqliteConfig::default()).unwrap();
    memory
        .messages(session)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

#[tokio::test]
async fn a_second_runtime_on_a_held_session_fails_busy_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    let gate = Arc::new(Notify::new());
    let first_provider = scripted(vec![
        ScriptedTurn::gated(
            gate.clone(),
            ScriptedTurn::tool_call("call_0", "echo", r#"{"text":"one"}"#),
        ),
        ScriptedTurn::text("first done"),
    ]);
    let (first, _) = runtime_on(&path, first_provider.clone(), Duration::from_secs(30));
    let running = tokio::spawn({
        let session = session.clone();
        async move { first.session(&session).prompt("first").await }
    });
    // The first run holds the session: it waits for its provider.
    wait_for_requests(&first_provider, 1).await;

    let second_provider = scripted(vec![ScriptedTurn::text("never")]);
    let (second, events) = runtime_on(&path, second_provider.clone(), Duration::from_millis(200));
    let error = second.session(&session).prompt("second").await.unwrap_err();
    assert!(matches!(error, RuntimeError::SessionBusy(_)), "{error:?}");
    assert_eq!(error.kind(), "session_busy");
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "session {session} is in use by another run (pid {}, since ",
            std::process::id()
        )),
        "{text}"
    );
    // The closing event says so; the provider was never asked; nothing was stored.
    let Some(RuntimeEvent::Error { kind, message }) = events.events().last().cloned() else {
        panic!("no error event: {:?}", events.events());
    };
    assert_eq!(kind, "session_busy");
    assert_eq!(message, text);
    assert!(second_provider.requests().is_empty());
    assert_eq!(stored(&path, &session).await, [Message::user("first")]);

    // The first run ends and releases the session: the second gets it.
    gate.notify_one();
    let outcome = running.await.unwrap().unwrap();
    assert_eq!(outcome.final_text, "first done");
    let outcome = second.session(&session).prompt("second").await.unwrap();
    assert_eq!(outcome.final_text, "never");
    let messages = stored(&path, &session).await;
    assert_eq!(messages.len(), 6);
    assert!(is_well_formed(&messages));
}

#[tokio::test]
async fn a_waiting_run_goes_on_once_the_holder_ends_and_never_interleaves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    let gate = Arc::new(Notify::new());
    let first_provider = scripted(vec![
        ScriptedTurn::gated(
            gate.clone(),
            ScriptedTurn::tool_call("call_0", "echo", r#"{"text":"one"}"#),
        ),
        ScriptedTurn::text("first done"),
    ]);
    let second_provider = scripted(vec![
        ScriptedTurn::tool_call("call_0", "echo", r#"{"text":"two"}"#),
        ScriptedTurn::text("second done"),
    ]);
    let (first, _) = runtime_on(&path, first_provider.clone(), Duration::from_secs(60));
    let (second, _) = runtime_on(&path, second_provider.clone(), Duration::from_secs(60));
    let first_run = tokio::spawn({
        let session = session.clone();
        async move { first.session(&session).prompt("first").await }
    });
    wait_for_requests(&first_provider, 1).await;
    let second_run = tokio::spawn({
        let session = session.clone();
        async move { second.session(&session).prompt("second").await }
    });
    // Let the second run start waiting; it must not get in while the first holds.
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(second_provider.requests().is_empty());
    gate.notify_one();
    first_run.await.unwrap().unwrap();
    second_run.await.unwrap().unwrap();
    let texts: Vec<String> = stored(&path, &session)
        .await
        .iter()
        .map(|m| m.text().to_owned())
        .collect();
    assert_eq!(
        texts,
        [
            "first",
            "",
            "echo: one",
            "first done",
            "second",
            "",
            "echo: two",
            "second done"
        ]
    );
}

#[tokio::test]
async fn a_cancelled_run_releases_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    let held = scripted(vec![ScriptedTurn::gated(
        Arc::new(Notify::new()),
        ScriptedTurn::text("never"),
    )]);
    let (first, _) = runtime_on(&path, held.clone(), Duration::ZERO);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (session, cancel) = (session.clone(), cancel.clone());
        async move {
            first
                .session(&session)
                .prompt("first")
                .cancel(&cancel)
                .await
        }
    });
    wait_for_requests(&held, 1).await;
    cancel.cancel();
    let error = running.await.unwrap().unwrap_err();
    assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    // Released at the end of the run: another runtime gets it without waiting.
    let (second, _) = runtime_on(
        &path,
        scripted(vec![ScriptedTurn::text("second done")]),
        Duration::ZERO,
    );
    second.session(&session).prompt("second").await.unwrap();
}

#[tokio::test]
async fn a_run_dropped_midway_releases_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    let held = scripted(vec![ScriptedTurn::gated(
        Arc::new(Notify::new()),
        ScriptedTurn::text("never"),
    )]);
    let (first, _) = runtime_on(&path, held.clone(), Duration::ZERO);
    let running = tokio::spawn({
        let session = session.clone();
        async move { first.session(&session).prompt("first").await }
    });
    wait_for_requests(&held, 1).await;
    // The run's future is dropped (its task aborted) without ending normally.
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    let (second, _) = runtime_on(
        &path,
        scripted(vec![ScriptedTurn::text("second done")]),
        Duration::from_secs(60),
    );
    let outcome = second.session(&session).prompt("second").await.unwrap();
    assert_eq!(outcome.final_text, "second done");
}

#[tokio::test]
async fn a_lease_ttl_under_a_second_is_refused() {
    let error = builder(scripted(vec![]), Arc::new(CollectingEventSink::new()))
        .session_lease_ttl(Duration::from_millis(10))
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), "config");
    assert!(error.to_string().contains("lease"), "{error}");
}
