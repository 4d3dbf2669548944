//! A typed run and a person's approval (issue 44): a deferred call ends a typed run
//! waiting (an outcome, not an error) with its events, the model is never told a
//! person will be asked when none will, and the run resumes to the typed value; every
//! `tool_started` is closed, `final_answer` retries are events; typed runs stream.

use crate::common;
use crate::deferred_approvals::{Deferring, HOUR, ShellTool, runtime, three_calls};

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use futures::StreamExt;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{
    ApprovalDecision, CollectingEventSink, FINAL_ANSWER_TOOL, PendingApproval, RunOutcome,
    RuntimeEvent,
};
use oxydra_types::{MessageRole, SessionId};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Saved {
    note_saved: bool,
}

fn waiting(outcome: RunOutcome<impl std::fmt::Debug>) -> Vec<PendingApproval> {
    match outcome {
        RunOutcome::AwaitingApproval(pending) => pending,
        other => panic!("expected the run to wait for approval, got {other:?}"),
    }
}

fn is_waiting_error(event: Option<&RuntimeEvent>) -> bool {
    matches!(event, Some(RuntimeEvent::Error { kind, .. }) if kind == "waiting_approval")
}

#[tokio::test]
async fn a_deferred_call_ends_a_typed_run_waiting_and_it_resumes_to_the_value() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "shell", r#"{"command":"save note"}"#),
        ScriptedTurn::tool_call("c2", FINAL_ANSWER_TOOL, r#"{"note_saved":true}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let shell = ShellTool::default();
    let broker = Deferring::new(HOUR);
    let runtime = runtime(
        provider.clone(),
        &events,
        &shell,
        broker.clone(),
        Some(memory.clone()),
    );
    let session = SessionId::generate();
    let outcome = runtime
        .session(&session)
        .prompt("save a note")
        .output::<Saved>()
        .await
        .unwrap();
    let pending = waiting(outcome);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id.as_str(), "c1");
    assert_eq!(pending[0].tool, "shell");
    // Nothing ran, the model was not asked again, and nothing told it a person would
    // be asked: the waiting call has no stored result.
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    assert_eq!(provider.requests().len(), 1);
    let stored = memory.messages(&session).await.unwrap();
    let roles: Vec<MessageRole> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(roles, [MessageRole::User, MessageRole::Assistant]);
    // The events announce the request, close the call's start, and end waiting.
    let seen = events.take();
    assert!(
        seen.iter().any(|e| matches!(
            e,
            RuntimeEvent::ApprovalRequested { approval_id, .. }
                if *approval_id == pending[0].approval_id
        )),
        "{seen:?}"
    );
    assert!(is_waiting_error(seen.last()), "{seen:?}");
    assert_tool_events_closed(&seen);
    // The session's pending approvals are listed without resuming it.
    assert_eq!(runtime.pending_approvals(&session).await.unwrap(), pending);
    assert_eq!(provider.requests().len(), 1);

    // Approved, the call runs, the model answers, and the run ends with the value.
    let outcome = runtime
        .session(&session)
        .decide(pending[0].clone(), ApprovalDecision::ApproveOnce)
        .output::<Saved>()
        .await
        .unwrap();
    let Some((saved, outcome)) = outcome.finished() else {
        panic!("the resumed run should finish");
    };
    assert_eq!(saved, Saved { note_saved: true });
    // One budget across the wait: the turn before it and the one after.
    assert_eq!(outcome.turns, 2);
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        tool_results(&provider.requests()[1]),
        [("c1".to_owned(), "ran save note".to_owned())]
    );
    assert!(
        runtime
            .pending_approvals(&session)
            .await
            .unwrap()
            .is_empty()
    );
    let seen = events.take();
    assert!(matches!(seen.last(), Some(RuntimeEvent::Final { .. })));
    assert_tool_events_closed(&seen);
}

#[tokio::test]
async fn an_answer_given_beside_a_waiting_call_is_sent_back_once_it_is_decided() {
    let provider = scripted(vec![
        // The model answers before it knows whether the note was saved.
        ScriptedTurn::tool_calls(vec![
            call("c1", FINAL_ANSWER_TOOL, r#"{"note_saved":true}"#),
            call("c2", "shell", r#"{"command":"save note"}"#),
        ]),
        ScriptedTurn::tool_call("c3", FINAL_ANSWER_TOOL, r#"{"note_saved":false}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let shell = ShellTool::default();
    let runtime = runtime(
        provider.clone(),
        &events,
        &shell,
        Deferring::new(HOUR),
        None,
    );
    let session = SessionId::generate();
    let pending = waiting(
        runtime
            .session(&session)
            .prompt("save a note")
            .output::<Saved>()
            .await
            .unwrap(),
    );
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id.as_str(), "c2");
    let seen = events.take();
    assert_tool_events_closed(&seen);
    assert!(is_waiting_error(seen.last()), "{seen:?}");

    let outcome = runtime
        .session(&session)
        .decide(
            pending[0].clone(),
            ApprovalDecision::Deny {
                reason: Some("not now".into()),
            },
        )
        .output::<Saved>()
        .await
        .unwrap();
    let (saved, _) = outcome.finished().unwrap();
    assert_eq!(saved, Saved { note_saved: false });
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    // The early answer was not accepted: the model read why, with the denial.
    let results = tool_results(&provider.requests()[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "c1");
    assert!(results[0].1.contains("not accepted"), "{}", results[0].1);
    assert_eq!(results[1].0, "c2");
    assert!(results[1].1.contains("not now"), "{}", results[1].1);
    assert_tool_events_closed(&events.take());
}

#[tokio::test]
async fn final_answer_retries_are_tool_events() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", FINAL_ANSWER_TOOL, r#"{"note_saved":"yes"}"#),
        ScriptedTurn::tool_call("c2", FINAL_ANSWER_TOOL, r#"{"note_saved":true}"#),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone()).build().unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("save a note")
        .output::<Saved>()
        .await
        .unwrap();
    assert_eq!(outcome.finished().unwrap().0, Saved { note_saved: true });
    let seen = events.take();
    assert_tool_events_closed(&seen);
    let answers: Vec<(&str, &str)> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ToolStarted { call_id, .. } => Some((call_id.as_str(), "started")),
            RuntimeEvent::ToolFailed { call_id, .. } => Some((call_id.as_str(), "failed")),
            RuntimeEvent::ToolCompleted { call_id, .. } => Some((call_id.as_str(), "completed")),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("c1", "started"),
            ("c1", "failed"),
            ("c2", "started"),
            ("c2", "completed")
        ]
    );
    let failure = seen.iter().find_map(|e| match e {
        RuntimeEvent::ToolFailed { error, .. } => Some(error.clone()),
        _ => None,
    });
    assert!(failure.unwrap().contains("note_saved"));
}

#[tokio::test]
async fn a_typed_run_streams_and_its_handle_gives_the_typed_outcome() {
    let provider = scripted(vec![ScriptedTurn::tool_call(
        "c1",
        FINAL_ANSWER_TOOL,
        r#"{"note_saved":true}"#,
    )]);
    let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let (stream, handle) = runtime
        .session(&SessionId::generate())
        .prompt("save a note")
        .output::<Saved>()
        .stream();
    let streamed: Vec<RuntimeEvent> = stream.collect().await;
    let (saved, outcome) = handle.await.unwrap().finished().unwrap();
    assert_eq!(saved, Saved { note_saved: true });
    assert!(matches!(
        streamed.last(),
        Some(RuntimeEvent::Final {
            output: Some(_),
            ..
        })
    ));
    assert_eq!(outcome.turns, 1);
}

#[tokio::test]
async fn a_streamed_typed_run_that_waits_ends_its_stream_and_handle_waiting() {
    let provider = scripted(vec![ScriptedTurn::tool_call(
        "c1",
        "shell",
        r#"{"command":"save note"}"#,
    )]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = runtime(
        provider,
        &events,
        &ShellTool::default(),
        Deferring::new(HOUR),
        None,
    );
    let session = SessionId::generate();
    let (stream, handle) = runtime
        .session(&session)
        .prompt("save a note")
        .output::<Saved>()
        .stream();
    let streamed: Vec<RuntimeEvent> = stream.collect().await;
    let pending = waiting(handle.await.unwrap());
    assert!(is_waiting_error(streamed.last()), "{streamed:?}");
    assert_tool_events_closed(&streamed);
    assert_eq!(runtime.pending_approvals(&session).await.unwrap(), pending);
}

#[tokio::test]
async fn an_untyped_run_gives_waiting_as_an_outcome_too() {
    let events = Arc::new(CollectingEventSink::new());
    let runtime = runtime(
        scripted(vec![three_calls()]),
        &events,
        &ShellTool::default(),
        Deferring::new(HOUR),
        None,
    );
    let session = SessionId::generate();
    let outcome = runtime
        .session(&session)
        .prompt("clean up")
        .outcome()
        .await
        .unwrap();
    assert!(outcome.is_awaiting_approval());
    assert_eq!(outcome.pending().len(), 1);
    assert_eq!(
        runtime.pending_approvals(&session).await.unwrap(),
        outcome.pending()
    );
    // The old form: waiting as the error.
    let error = outcome.into_result().unwrap_err();
    assert_eq!(error.kind(), "waiting_approval");
    // A session that waits for nothing lists nothing.
    assert!(
        runtime
            .pending_approvals(&SessionId::generate())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_aborted_streamed_run_ends_its_handle_with_a_run_task_error() {
    let provider = scripted(vec![ScriptedTurn::HangAfter(Vec::new())]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let (_stream, handle) = runtime
        .session(&SessionId::generate())
        .prompt("wait")
        .stream();
    handle.abort();
    let error = handle.await.unwrap_err();
    assert_eq!(error.kind(), "run_task");
}
