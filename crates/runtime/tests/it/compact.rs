//! `AgentRuntime::compact` (a chat's `/compact`): the conversation condensed now,
//! whatever the summary trigger says — every turn but the newest into a stored summary
//! the next run sends in their place; nothing to condense is no call; a failed
//! summarisation is an error that leaves the conversation as it was.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{ProviderError, ScriptedTurn};
use oxydra_runtime::testing::{SUMMARY_HEADER, SUMMARY_INSTRUCTIONS};
use oxydra_runtime::{CollectingEventSink, RuntimeError};
use oxydra_types::{Message, MessageRole, SessionId};
use tokio_util::sync::CancellationToken;

/// A runtime over `provider` storing in a new in-memory SQLite store, and the store.
fn with_memory(
    provider: &Arc<oxydra_provider::ScriptedProvider>,
) -> (oxydra_runtime::AgentRuntime, Arc<SqliteMemory>) {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .without_retries()
        .build()
        .unwrap();
    (runtime, memory)
}

/// Two short exchanges: far under any trigger of the default window.
fn two_exchanges() -> Vec<Message> {
    vec![
        Message::user("list three fruits"),
        Message::assistant("apple, pear, plum"),
        Message::user("and a vegetable"),
        Message::assistant("leek"),
    ]
}

/// A runtime over `provider`, its store, and a session holding [`two_exchanges`].
async fn two_exchanges_stored(
    provider: &Arc<oxydra_provider::ScriptedProvider>,
) -> (oxydra_runtime::AgentRuntime, Arc<SqliteMemory>, SessionId) {
    let (runtime, memory) = with_memory(provider);
    let session = SessionId::generate();
    runtime
        .append_messages(&session, two_exchanges())
        .await
        .unwrap();
    (runtime, memory, session)
}

#[tokio::test]
async fn compact_condenses_all_but_the_newest_turn_under_the_trigger() {
    let provider = scripted(vec![
        ScriptedTurn::text("SUMMARY: fruits were listed"),
        ScriptedTurn::text("ok"),
    ]);
    let (runtime, memory, session) = two_exchanges_stored(&provider).await;

    let compacted = runtime
        .compact(&session, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        compacted.summary.as_deref(),
        Some("SUMMARY: fruits were listed")
    );
    assert!(compacted.usage.input_tokens > 0, "{compacted:?}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages[0].text(), SUMMARY_INSTRUCTIONS);
    let asked = requests[0].messages[1].text();
    assert!(asked.contains("list three fruits"), "{asked}");
    // The newest turn stays as it is.
    assert!(!asked.contains("leek"), "{asked}");
    let stored = memory.load_summary(&session).await.unwrap();
    assert_eq!(stored.text.as_deref(), Some("SUMMARY: fruits were listed"));
    // Every message stays stored.
    assert_eq!(memory.messages(&session).await.unwrap().len(), 4);

    // The next run sends the summary in place of the first exchange.
    let outcome = runtime.session(&session).prompt("thanks").await.unwrap();
    assert_eq!(outcome.final_text, "ok");
    let next = &provider.requests()[1];
    assert_eq!(next.messages[0].role, MessageRole::System);
    assert_eq!(
        next.messages[0].text(),
        format!("{SUMMARY_HEADER}\nSUMMARY: fruits were listed")
    );
    let sent: Vec<&str> = next.messages.iter().map(Message::text).collect();
    assert!(!sent.contains(&"apple, pear, plum"), "{sent:?}");
    assert!(
        sent.contains(&"leek") && sent.contains(&"thanks"),
        "{sent:?}"
    );
}

#[tokio::test]
async fn a_single_turn_has_nothing_to_compact_and_makes_no_call() {
    let provider = scripted(vec![]);
    let (runtime, memory) = with_memory(&provider);
    let session = SessionId::generate();
    runtime
        .append_messages(
            &session,
            vec![Message::user("hi"), Message::assistant("hello")],
        )
        .await
        .unwrap();
    let compacted = runtime
        .compact(&session, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(compacted.summary, None);
    assert_eq!(compacted.cost, 0.0);
    assert!(provider.requests().is_empty());
    assert_eq!(memory.load_summary(&session).await.unwrap().text, None);
}

#[tokio::test]
async fn a_failed_summarisation_is_an_error_and_changes_nothing() {
    let provider = scripted(vec![ScriptedTurn::Error(ProviderError::Server {
        status: 500,
        message: "summariser down".into(),
    })]);
    let (runtime, memory, session) = two_exchanges_stored(&provider).await;
    let error = runtime
        .compact(&session, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Config(_)), "{error:?}");
    assert!(
        error.to_string().contains("summarisation call failed"),
        "{error}"
    );
    assert!(error.to_string().contains("unchanged"), "{error}");
    assert_eq!(memory.load_summary(&session).await.unwrap().text, None);
}

#[tokio::test]
async fn compact_waits_for_nothing_once_cancelled() {
    let provider = scripted(vec![]);
    let (runtime, _, session) = two_exchanges_stored(&provider).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = runtime.compact(&session, &cancel).await.unwrap_err();
    assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    assert!(provider.requests().is_empty());
}
