use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{ProviderError, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::testing::{SUMMARY_HEADER, SUMMARY_INSTRUCTIONS};
use oxydra_runtime::{AgentRuntime, CollectingEventSink, RuntimeError, RuntimeLimits};
use oxydra_types::{CallId, Message, MessageRole, RuntimeEvent, RuntimeProgressKind, SessionId};
use tokio_util::sync::CancellationToken;

fn apples(n: usize) -> String {
    format!("apples{}", " apple".repeat(n))
}

/// Four turns of 120 apples, user and assistant in turn: more than a tiny window holds.
fn apple_history() -> Vec<Message> {
    (0..4)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(apples(120))
            } else {
                Message::assistant(apples(120))
            }
        })
        .collect()
}

fn tiny_window(window: u32, trigger: f64) -> RuntimeLimits {
    window_limits(window, 50, trigger)
}

#[tokio::test]
async fn old_turns_are_condensed_into_a_stored_summary_and_injected() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("SUMMARY: the user listed apples"),
        ScriptedTurn::text("ok"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .memory(memory.clone())
        .limits(tiny_window(600, 0.8))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, apple_history())
        .await
        .unwrap();
    let outcome = runtime
        .session(&session)
        .prompt("what next?")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "ok");
    // The summary call's tokens count too.
    assert_eq!(outcome.usage.input_tokens, 20);

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages[0].text(), SUMMARY_INSTRUCTIONS);
    assert!(
        requests[0].messages[1]
            .text()
            .contains("[user] apples apple")
    );
    assert!(requests[0].tools.is_empty());
    let main = &requests[1];
    assert_eq!(main.messages[0].role, MessageRole::System);
    assert_eq!(
        main.messages[0].text(),
        format!("{SUMMARY_HEADER}\nSUMMARY: the user listed apples")
    );
    // Condensed messages are gone, the newest turn and the question remain.
    assert_eq!(main.messages.len(), 3, "{:#?}", main.messages);
    assert_eq!(main.messages[1].role, MessageRole::Assistant);
    assert_eq!(main.messages[2].text(), "what next?");

    let stored = memory.load_summary(&session).await.unwrap();
    assert_eq!(
        stored.text.as_deref(),
        Some("SUMMARY: the user listed apples")
    );
    assert_eq!(stored.covers_through, 3);
    assert_eq!(stored.epoch, 1);
    // Every message stays stored.
    assert_eq!(memory.messages(&session).await.unwrap().len(), 6);

    let kinds: Vec<&'static str> = events
        .events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Progress(p) => Some(p.kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["rolling_summary", "provider_call"]);

    // A new runtime on the same memory starts from the stored summary.
    let provider2 = scripted(vec![ScriptedTurn::text("again")]);
    let runtime2 = builder(provider2.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits(tiny_window(600, 0.8))
        .build()
        .unwrap();
    runtime2.session(&session).prompt("and now?").await.unwrap();
    let request = &provider2.requests()[0];
    assert!(request.messages[0].text().starts_with(SUMMARY_HEADER));
    assert_eq!(request.messages.len(), 5);
    assert_eq!(request.messages.last().unwrap().text(), "and now?");
}

#[tokio::test]
async fn summary_without_memory_is_kept_in_process() {
    let provider = scripted(vec![
        ScriptedTurn::text("SUMMARY: apples"),
        ScriptedTurn::text("ok"),
        ScriptedTurn::text("still ok"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .limits(tiny_window(600, 0.8))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, apple_history())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    runtime
        .session(&session)
        .prompt("q1")
        .cancel(&cancel)
        .await
        .unwrap();
    runtime
        .session(&session)
        .prompt("q2")
        .cancel(&cancel)
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let last = &requests[2];
    assert!(last.messages[0].text().starts_with(SUMMARY_HEADER));
    assert_eq!(last.messages.last().unwrap().text(), "q2");
    assert!(events.events().iter().any(
        |e| matches!(e, RuntimeEvent::Progress(p) if p.kind == RuntimeProgressKind::RollingSummary)
    ));
}

#[tokio::test]
async fn truncation_drops_whole_call_groups_and_keeps_the_question() {
    let provider = scripted(vec![ScriptedTurn::text("fine")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .system_prompt("You are terse.")
        // A trigger above 1 turns the summary off for this history.
        .limits(tiny_window(400, 100.0))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(
            &session,
            vec![
                Message::user("q1"),
                Message::assistant_with_tool_calls(
                    None,
                    vec![call("c1", "echo", r#"{"text":"x"}"#)],
                ),
                Message::tool_result(CallId::from("c1"), "echo", apples(300)),
                Message::assistant(apples(150)),
                Message::user("q2"),
            ],
        )
        .await
        .unwrap();
    runtime.session(&session).prompt("q3").await.unwrap();
    let request = &provider.requests()[0];
    let texts: Vec<(MessageRole, String)> = request
        .messages
        .iter()
        .map(|m| (m.role, m.text().chars().take(12).collect()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (MessageRole::System, "You are ters".to_owned()),
            (MessageRole::Assistant, "apples apple".to_owned()),
            (MessageRole::User, "q2".to_owned()),
            (MessageRole::User, "q3".to_owned()),
        ]
    );
    assert_no_orphans(&request.messages);
    // Everything is still in the session.
    assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 7);
}

#[tokio::test]
async fn the_latest_question_survives_a_huge_tool_result() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", &format!(r#"{{"text":"{}"}}"#, apples(500))),
        ScriptedTurn::text("fine"),
    ]);
    let runtime = echo_runtime(&provider, tiny_window(400, 100.0));
    let session = SessionId::generate();
    runtime
        .append_messages(
            &session,
            vec![Message::user(apples(100)), Message::assistant(apples(100))],
        )
        .await
        .unwrap();
    runtime
        .session(&session)
        .prompt("echo a lot")
        .await
        .unwrap();
    let request = &provider.requests()[1];
    // Older turns dropped; the question and the (oversized) newest group kept whole.
    assert_eq!(request.messages[0].text(), "echo a lot");
    assert_eq!(request.messages.len(), 3);
    assert_no_orphans(&request.messages);
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_truncation_once_per_run() {
    let provider = scripted(vec![
        ScriptedTurn::Error(oxydra_provider::ProviderError::Server {
            status: 500,
            message: "summariser down".into(),
        }),
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"x"}"#),
        ScriptedTurn::text("answered anyway"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .limits(tiny_window(600, 0.8))
        // The summary call fails once; retrying it is the provider's business.
        .without_retries()
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, apple_history())
        .await
        .unwrap();
    let outcome = runtime.session(&session).prompt("q").await.unwrap();
    assert_eq!(outcome.final_text, "answered anyway");
    // One failed summary call, then two loop calls; no second summary attempt.
    assert_eq!(provider.requests().len(), 3);
    let summaries = events
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::Progress(p) if p.kind == RuntimeProgressKind::RollingSummary))
        .count();
    assert_eq!(summaries, 1);
    for request in &provider.requests()[1..] {
        assert_no_orphans(&request.messages);
        assert!(
            request
                .messages
                .iter()
                .all(|m| !m.text().starts_with(SUMMARY_HEADER))
        );
    }
}

fn echo_apples(id: &str, n: usize) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "echo", &format!(r#"{{"text":"{}"}}"#, apples(n)))
}

#[tokio::test]
async fn a_long_single_prompt_run_condenses_its_old_tool_turns() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    // Every tool turn (call and echoed result) takes about 260 tokens; the summary
    // triggers above 475 (half of 950 usable tokens).
    let provider = scripted(vec![
        echo_apples("c1", 120),
        echo_apples("c2", 120),
        ScriptedTurn::text("SUMMARY-1: echoed apples once"),
        echo_apples("c3", 120),
        ScriptedTurn::text("SUMMARY-2: echoed apples twice"),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .memory(memory.clone())
        .limits(tiny_window(1_000, 0.5))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let outcome = runtime
        .session(&session)
        .prompt("echo apples three times")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(outcome.turns, 4);

    let requests = provider.requests();
    assert_eq!(requests.len(), 6);
    // The third call condenses the prompt and the first tool turn.
    let first = &requests[2];
    assert_eq!(first.messages[0].text(), SUMMARY_INSTRUCTIONS);
    let transcript = first.messages[1].text();
    assert!(
        transcript.contains("[user] echo apples three times"),
        "{transcript}"
    );
    assert!(
        transcript.contains("[assistant called echo]"),
        "{transcript}"
    );
    assert!(
        transcript.contains("[echo result] echo: apples"),
        "{transcript}"
    );
    assert_eq!(
        transcript.matches("[echo result]").count(),
        1,
        "{transcript}"
    );
    // The next loop request: summary, the prompt verbatim, the newest tool turn.
    let next = &requests[3];
    assert_eq!(
        next.messages[0].text(),
        format!("{SUMMARY_HEADER}\nSUMMARY-1: echoed apples once")
    );
    assert_eq!(next.messages[1].role, MessageRole::User);
    assert_eq!(next.messages[1].text(), "echo apples three times");
    assert_eq!(next.messages.len(), 4, "{:#?}", next.messages);
    assert_eq!(next.messages[2].tool_calls[0].id, CallId::from("c2"));
    assert_no_orphans(&next.messages[1..]);
    // The summary rolls on within the same run: the second one builds on the first.
    let second = &requests[4];
    assert_eq!(second.messages[0].text(), SUMMARY_INSTRUCTIONS);
    assert!(
        second.messages[1]
            .text()
            .starts_with("Previous summary:\nSUMMARY-1: echoed apples once")
    );
    assert!(!second.messages[1].text().contains("[user]"));
    let last = &requests[5];
    assert_eq!(
        last.messages[0].text(),
        format!("{SUMMARY_HEADER}\nSUMMARY-2: echoed apples twice")
    );
    assert_eq!(last.messages[1].text(), "echo apples three times");
    assert_eq!(last.messages.len(), 4, "{:#?}", last.messages);
    assert_eq!(last.messages[2].tool_calls[0].id, CallId::from("c3"));
    assert_no_orphans(&last.messages[1..]);

    // Stored with the epoch compare-and-swap, covering through the second tool turn.
    let stored = memory.load_summary(&session).await.unwrap();
    assert_eq!(
        stored.text.as_deref(),
        Some("SUMMARY-2: echoed apples twice")
    );
    assert_eq!(stored.epoch, 2);
    assert_eq!(stored.covers_through, 5);
    assert_eq!(memory.messages(&session).await.unwrap().len(), 8);
    let summaries = events
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::Progress(p) if p.kind == RuntimeProgressKind::RollingSummary))
        .count();
    assert_eq!(summaries, 2);
}

#[tokio::test]
async fn a_summary_timeout_falls_back_to_truncation() {
    let provider = scripted(vec![
        // The summariser never answers.
        ScriptedTurn::HangAfter(Vec::new()),
        ScriptedTurn::text("answered anyway"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .limits({
            let mut custom = tiny_window(600, 0.8);
            custom.turn_timeout = std::time::Duration::from_millis(200);
            custom
        })
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, apple_history())
        .await
        .unwrap();
    let outcome = runtime.session(&session).prompt("q").await.unwrap();
    assert_eq!(outcome.final_text, "answered anyway");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages[0].text(), SUMMARY_INSTRUCTIONS);
    let main = &requests[1];
    assert!(
        main.messages
            .iter()
            .all(|m| !m.text().starts_with(SUMMARY_HEADER))
    );
    assert_eq!(main.messages.last().unwrap().text(), "q");
}

#[tokio::test]
async fn cancelling_during_a_summary_call_ends_the_run_as_cancelled() {
    let provider = scripted(vec![
        ScriptedTurn::HangAfter(Vec::new()),
        ScriptedTurn::text("never"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .limits(tiny_window(600, 0.8))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, apple_history())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    // Cancel once the summary request is in flight (the provider hangs on it).
    let canceller = {
        let cancel = cancel.clone();
        let provider = provider.clone();
        tokio::spawn(async move {
            while provider.requests().is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            cancel.cancel();
        })
    };
    let error = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        runtime.session(&session).prompt("q").cancel(&cancel),
    )
    .await
    .expect("the hanging summary call was not cancelled")
    .unwrap_err();
    assert!(
        matches!(error, oxydra_runtime::RuntimeError::Cancelled),
        "{error:?}"
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages[0].text(), SUMMARY_INSTRUCTIONS);
    canceller.await.unwrap();
}

/// A runtime with the echo tool and `limits`, its events collected and not looked at.
fn echo_runtime(provider: &Arc<ScriptedProvider>, limits: RuntimeLimits) -> AgentRuntime {
    builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .limits(limits)
        .build()
        .unwrap()
}

fn too_long() -> ScriptedTurn {
    ScriptedTurn::Error(ProviderError::ContextLengthExceeded {
        message: "prompt is too long".into(),
    })
}

#[tokio::test]
async fn a_context_length_error_is_retried_once_with_fewer_messages() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", &format!(r#"{{"text":"{}"}}"#, apples(40))),
        ScriptedTurn::tool_calls(vec![
            call("c2", "echo", r#"{"text":"a"}"#),
            call("c3", "echo", r#"{"text":"b"}"#),
        ]),
        too_long(),
        ScriptedTurn::text("done"),
    ]);
    let runtime = echo_runtime(&provider, tiny_window(100_000, 100.0));
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("count the apples")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let refused = &requests[2].messages;
    let retried = &requests[3].messages;
    assert_eq!(refused.len(), 1 + 2 + 3);
    assert!(retried.len() < refused.len(), "{retried:?}");
    assert_no_orphans(retried);
    // The oldest call group went whole; the question and the newest group stayed.
    assert_eq!(retried[0].text(), "count the apples");
    let results: Vec<String> = tool_results(&requests[3])
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(results, vec!["c2", "c3"]);
}

#[tokio::test]
async fn a_second_context_length_error_fails_the_run() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"hi"}"#),
        too_long(),
        too_long(),
        ScriptedTurn::text("never"),
    ]);
    let runtime = echo_runtime(&provider, tiny_window(100_000, 100.0));
    let error = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            RuntimeError::Provider(ProviderError::ContextLengthExceeded { .. })
        ),
        "{error:?}"
    );
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(provider.remaining(), 1);
}
