//! Deferred consent (docs/executor.md): a broker that defers, the calls held behind a
//! deferred one, and a person's verdict taken when the call runs again.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::{call, ctx, echo, executor};
use oxydra_executor::{
    CallVerdict, CollectingEventSink, NoopEventSink, PermissionBroker, PermissionDecision,
    PermissionRequest, PermissionScope, StaticBroker, ToolExecutionError,
};
use oxydra_types::{RuntimeEvent, SafetyTier};

const TTL: Duration = Duration::from_secs(600);

/// Defers every request and counts them.
#[derive(Default)]
struct Deferring {
    asked: AtomicUsize,
}

#[async_trait]
impl PermissionBroker for Deferring {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        self.asked.fetch_add(1, Ordering::SeqCst);
        PermissionDecision::Defer(TTL)
    }
}

#[tokio::test]
async fn a_deferred_call_does_not_run_and_holds_the_calls_after_it() {
    let shell = echo("shell", SafetyTier::Privileged);
    let read = echo("read", SafetyTier::ReadOnly);
    let ex = executor(&[shell.clone(), read.clone()], vec![])
        .with_permission_broker(Arc::new(StaticBroker(PermissionDecision::Defer(TTL))));
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let events = CollectingEventSink::new();
    let calls = [
        call("1", "read", r#"{"p":"a"}"#),
        call("2", "shell", r#"{"c":"rm x"}"#),
        call("3", "read", r#"{"p":"b"}"#),
    ];
    let result = ex.execute_batch(&calls, &mut process, &ctx, &events).await;
    assert!(result.records[0].is_success());
    assert!(matches!(
        result.records[1].error(),
        Some(ToolExecutionError::ApprovalDeferred { tool_name, scope: PermissionScope::Session, ttl, reason })
            if tool_name == "shell" && *ttl == TTL && reason == "the tool is privileged"
    ));
    assert!(matches!(
        result.records[2].error(),
        Some(ToolExecutionError::HeldForApproval { .. })
    ));
    assert!(result.records[1].error().unwrap().waits_for_approval());
    assert!(result.records[2].error().unwrap().waits_for_approval());
    // Neither the deferred call nor the held one ran.
    assert_eq!(shell.runs(), 0);
    assert_eq!(read.runs(), 1);
    // No `tool_failed` for calls that wait: they are not failures the model reads.
    let failed = events
        .events()
        .into_iter()
        .filter(|event| matches!(event, RuntimeEvent::ToolFailed { .. }))
        .count();
    assert_eq!(failed, 0);
}

#[tokio::test]
async fn a_verdict_is_taken_instead_of_asking_the_broker_once() {
    let shell = echo("shell", SafetyTier::Privileged);
    let broker = Arc::new(Deferring::default());
    let ex = executor(std::slice::from_ref(&shell), vec![]).with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [call("1", "shell", r#"{"c":"ls"}"#)];
    ex.decide_call(&ctx.session_id, &calls[0].id, CallVerdict::ApproveOnce);
    let result = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(result.all_succeeded());
    assert_eq!(broker.asked.load(Ordering::SeqCst), 0);
    assert_eq!(shell.runs(), 1);
    // The verdict was for that call once: the same id later is asked about again.
    let again = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(again.records[0].error().unwrap().waits_for_approval());
    assert_eq!(broker.asked.load(Ordering::SeqCst), 1);
    assert_eq!(shell.runs(), 1);
}

#[tokio::test]
async fn a_verdict_of_another_session_or_call_does_not_apply() {
    let shell = echo("shell", SafetyTier::Privileged);
    let ex = executor(std::slice::from_ref(&shell), vec![])
        .with_permission_broker(Arc::new(Deferring::default()));
    let (mine, other) = (ctx(), ctx());
    let mut process = ex.new_process_state();
    let calls = [call("1", "shell", r#"{"c":"ls"}"#)];
    ex.decide_call(&other.session_id, &calls[0].id, CallVerdict::ApproveOnce);
    ex.decide_call(
        &mine.session_id,
        &call("2", "shell", "{}").id,
        CallVerdict::ApproveOnce,
    );
    let result = ex
        .execute_batch(&calls, &mut process, &mine, &NoopEventSink)
        .await;
    assert!(result.records[0].error().unwrap().waits_for_approval());
    assert_eq!(shell.runs(), 0);
}

#[tokio::test]
async fn a_denying_verdict_reaches_the_model_with_the_persons_reason() {
    let shell = echo("shell", SafetyTier::Privileged);
    let ex = executor(std::slice::from_ref(&shell), vec![])
        .with_permission_broker(Arc::new(Deferring::default()));
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [call("1", "shell", r#"{"c":"rm -rf /"}"#)];
    ex.decide_call(
        &ctx.session_id,
        &calls[0].id,
        CallVerdict::Deny {
            reason: "not on the production box".to_owned(),
        },
    );
    let events = CollectingEventSink::new();
    let result = ex.execute_batch(&calls, &mut process, &ctx, &events).await;
    let text = result.records[0].content_for_model();
    assert!(
        text.starts_with("Tool execution failed: permission denied"),
        "{text}"
    );
    assert!(text.contains("not on the production box"), "{text}");
    assert_eq!(shell.runs(), 0);
    assert!(
        events
            .events()
            .iter()
            .any(|event| matches!(event, RuntimeEvent::ToolFailed { .. }))
    );
}

#[tokio::test]
async fn approving_for_the_scope_keeps_a_grant_for_later_calls() {
    let shell = echo("shell", SafetyTier::Privileged);
    let broker = Arc::new(Deferring::default());
    let ex = executor(std::slice::from_ref(&shell), vec![]).with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let first = [call("1", "shell", r#"{"c":"ls"}"#)];
    ex.decide_call(&ctx.session_id, &first[0].id, CallVerdict::ApproveForScope);
    ex.execute_batch(&first, &mut process, &ctx, &NoopEventSink)
        .await;
    let later = [call("2", "shell", r#"{"c":"pwd"}"#)];
    let result = ex
        .execute_batch(&later, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(result.all_succeeded());
    assert_eq!(broker.asked.load(Ordering::SeqCst), 0);
    assert_eq!(shell.runs(), 2);
    assert_eq!(ex.state_stats().grants, 1);
}

#[tokio::test]
async fn a_forgotten_verdict_does_not_apply() {
    let shell = echo("shell", SafetyTier::Privileged);
    let ex = executor(std::slice::from_ref(&shell), vec![])
        .with_permission_broker(Arc::new(Deferring::default()));
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [call("1", "shell", "{}")];
    ex.decide_call(&ctx.session_id, &calls[0].id, CallVerdict::ApproveOnce);
    ex.forget_call_decision(&ctx.session_id, &calls[0].id);
    let result = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(result.records[0].error().unwrap().waits_for_approval());
}
