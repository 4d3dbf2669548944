//! A stored session holding a huge message (a hostile provider's answer or tool
//! arguments): restoring it and running a turn stay bounded.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use oxydra_memory::SqliteMemory;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, RuntimeLimits, testing};
use oxydra_types::{CallId, Message, SessionId, ToolCall};
use tokio_util::sync::CancellationToken;

/// The attack: 20 MB of tool-call arguments in the stored history (counted exactly, a
/// minute of encoder work). Restoring the session and running a turn stay bounded:
/// the message is counted by its prefix, off the async thread (the encoder never runs
/// on the test's thread, and runs over a few prefixes in all), and no request carries
/// it.
#[tokio::test(flavor = "current_thread")]
async fn a_turn_on_a_session_with_a_huge_stored_message_finishes_promptly() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("a file was written"),
        ScriptedTurn::text("short answer"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits({
            let mut custom = RuntimeLimits::default();
            custom.context_window = Some(4_000);
            custom.max_output_tokens = Some(500);
            custom
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
    // Only a guard against a hang: the bound is the encoder's bytes, asserted below.
    let outcome = tokio::time::timeout(
        Duration::from_secs(300),
        runtime
            .session(&session)
            .prompt("what did you write?")
            .cancel(&cancel),
    )
    .await
    .expect("the turn did not finish");
    let outcome = outcome.unwrap();
    assert_eq!(outcome.final_text, "short answer");
    assert_eq!(testing::bytes_encoded_on_this_thread(), 0);
    // The huge arguments cost one prefix, every other text of the session a few bytes.
    let encoded = testing::bytes_encoded();
    assert!(
        encoded < 2 * testing::EXACT_PREFIX_BYTES as u64,
        "the encoder ran over {encoded} bytes"
    );
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

/// Counting a long history is bounded by the turn timeout (loading the encoder, a
/// fixed cost, is not: it gives way to cancellation only). The run ends with the
/// turn-timeout budget error, without asking the provider and without waiting for the
/// counts: when it returns, the encoder has been run over only some of the messages
/// (one in about 64 ms of an unoptimised build).
#[tokio::test(flavor = "current_thread")]
async fn counting_a_long_history_is_bounded_by_the_turn_timeout() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![ScriptedTurn::text("never reached")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits({
            let mut custom = RuntimeLimits::default();
            custom.context_window = Some(4_000);
            custom.max_output_tokens = Some(500);
            custom.turn_timeout = Duration::from_millis(200);
            custom
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
    // Only a guard against a hang: the turn timeout is what must end the run.
    let error = tokio::time::timeout(
        Duration::from_secs(300),
        runtime.session(&session).prompt("and now?").cancel(&cancel),
    )
    .await
    .expect("the run did not end")
    .unwrap_err();
    let encoded = testing::bytes_encoded();
    assert_eq!(error.kind(), "budget_exceeded", "{error}");
    assert_eq!(
        error.to_string(),
        "budget `turn_timeout` exceeded: counting the prompt's tokens did not finish \
         within 200 ms"
    );
    assert!(provider.requests().is_empty());
    let all = 100 * testing::EXACT_PREFIX_BYTES as u64;
    assert!(
        encoded < all,
        "the encoder ran over {encoded} bytes of {all}"
    );
}
