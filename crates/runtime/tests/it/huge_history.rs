//! A stored session holding a huge message (a hostile provider's answer or tool
//! arguments): restoring it and running a turn stay bounded.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxydra_memory::SqliteMemory;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, RuntimeLimits};
use oxydra_types::{CallId, Message, SessionId, ToolCall};
use tokio_util::sync::CancellationToken;

/// The attack: 20 MB of tool-call arguments in the stored history (counted exactly, a
/// minute of encoder work). Restoring the session and running a turn finish well
/// within the bound: the message is counted by its prefix, off the async threads.
#[tokio::test(flavor = "current_thread")]
async fn a_turn_on_a_session_with_a_huge_stored_message_finishes_promptly() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("a file was written"),
        ScriptedTurn::text("short answer"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits(RuntimeLimits {
            context_window: Some(4_000),
            max_output_tokens: Some(500),
            ..RuntimeLimits::default()
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    let huge = format!("{{\"content\":\"{}\"}}", "a".repeat(20 * 1024 * 1024));
    runtime
        .append_messages(
            &session,
            vec![
                Message::user("write the file"),
                Message::assistant_with_tool_calls(
                    None,
                    vec![ToolCall::new(CallId::from("c1"), "file_write", huge)],
                ),
                Message::tool_result(CallId::from("c1"), "file_write", "written"),
                Message::assistant("done"),
            ],
        )
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        runtime
            .session(&session)
            .prompt("what did you write?")
            .cancel(&cancel),
    )
    .await
    .expect("the turn did not finish within 10 s");
    let outcome = outcome.unwrap();
    assert_eq!(outcome.final_text, "short answer");
    // The huge call is condensed into the summary (whose request quotes it cut
    // short); the prompt holds the summary and the new question.
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let bytes: usize = request
            .messages
            .iter()
            .map(|m| {
                m.text().len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.len())
                        .sum::<usize>()
            })
            .sum();
        assert!(bytes < 64 * 1024, "a request of {bytes} bytes");
    }
    let last = &requests[1];
    assert!(last.messages[0].text().contains("a file was written"));
    assert_eq!(last.messages.last().unwrap().text(), "what did you write?");
}

/// Counting a long history is bounded by the turn timeout: the run ends with the
/// turn-timeout budget error instead of counting on.
#[tokio::test(flavor = "current_thread")]
async fn counting_a_long_history_is_bounded_by_the_turn_timeout() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![ScriptedTurn::text("never reached")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits(RuntimeLimits {
            context_window: Some(4_000),
            max_output_tokens: Some(500),
            turn_timeout: Duration::from_millis(200),
            ..RuntimeLimits::default()
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    // 100 messages of 128 KiB: each costs a 64 KiB encoder pass (about 0.1 s
    // unoptimised), ten seconds in all.
    let history: Vec<Message> = (0..100)
        .map(|i| {
            let text = format!("{i} {}", "b".repeat(128 * 1024));
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect();
    runtime.append_messages(&session, history).await.unwrap();
    let cancel = CancellationToken::new();
    let error = tokio::time::timeout(
        Duration::from_secs(5),
        runtime.session(&session).prompt("and now?").cancel(&cancel),
    )
    .await
    .expect("the run did not end within 5 s")
    .unwrap_err();
    assert_eq!(error.kind(), "budget_exceeded", "{error}");
    assert!(
        error.to_string().contains("counting the prompt's tokens"),
        "{error}"
    );
    assert!(provider.requests().is_empty());
}
