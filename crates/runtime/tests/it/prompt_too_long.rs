//! A prompt that cannot fit the context budget even alone is refused before any call.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, RuntimeError, RuntimeLimits};
use oxydra_types::{Message, SessionId};

fn small_window() -> RuntimeLimits {
    let mut limits = RuntimeLimits::default();
    limits.context_window = Some(2_000);
    limits.max_output_tokens = Some(100);
    limits.safety_buffer_tokens = 0;
    // No rolling summary: truncation alone keeps a long history in budget.
    limits.summary_trigger_ratio = 100.0;
    limits
}

/// The attack: a megabyte prompt against a 2,000-token window. The run ends with
/// `prompt_too_long` naming the count and the budget, the provider is never called,
/// and the session's stored history is what it was (the prompt is not stored).
#[tokio::test]
async fn a_megabyte_prompt_is_refused_without_a_provider_call() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![ScriptedTurn::text("never sent")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits(small_window())
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(
            &session,
            vec![Message::user("hi"), Message::assistant("hello")],
        )
        .await
        .unwrap();
    let prompt = "lorem ipsum dolor sit amet ".repeat(40_000);
    assert!(prompt.len() > 1_000_000);
    let error = runtime.session(&session).prompt(&prompt).await.unwrap_err();
    assert_eq!(error.kind(), "prompt_too_long");
    let RuntimeError::PromptTooLong { tokens, budget } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*budget, 1_900);
    assert!(*tokens > 100_000, "{tokens}");
    let message = error.to_string();
    assert!(message.contains(&format!("{tokens} tokens")), "{message}");
    assert!(message.contains("`[runtime] context_window`"), "{message}");
    assert_eq!(provider.requests().len(), 0, "the provider was called");
    assert_eq!(memory.messages(&session).await.unwrap().len(), 2);

    // The session is usable afterwards: a prompt that fits runs.
    let outcome = runtime
        .session(&session)
        .prompt("short question")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "never sent");
    assert_eq!(provider.requests().len(), 1);
}

/// A long history is no reason to refuse: only the new prompt (with the system prompt
/// and the tool schemas) is measured; the history is cut to fit as before.
#[tokio::test]
async fn a_prompt_that_fits_alone_runs_over_a_history_that_does_not() {
    let provider = scripted(vec![ScriptedTurn::text("ok")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .limits(small_window())
        .build()
        .unwrap();
    let session = SessionId::generate();
    let old = "apple ".repeat(1_500);
    runtime
        .append_messages(
            &session,
            vec![
                Message::user(old.clone()),
                Message::assistant(old.clone()),
                Message::user(old.clone()),
                Message::assistant(old),
            ],
        )
        .await
        .unwrap();
    let outcome = runtime
        .session(&session)
        .prompt("what next?")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "ok");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages.last().unwrap().text(), "what next?");
}
