//! Consent (docs/executor.md): brokers, decisions and standing grants.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{call, ctx, echo, executor, executor_with};
use oxydra_executor::{
    AlwaysApprove, NoopEventSink, PermissionBroker, PermissionDecision, PermissionRequest,
    PermissionScope, StaticBroker, ToolExecutionError, ToolExecutorConfig, ToolRule, ToolRuleKind,
};
use oxydra_types::SafetyTier;

/// Answers with a fixed decision and remembers every request.
struct Recorder {
    decision: PermissionDecision,
    asked: AtomicUsize,
    requests: Mutex<Vec<PermissionRequest>>,
}

impl Recorder {
    fn new(decision: PermissionDecision) -> Arc<Self> {
        Arc::new(Self {
            decision,
            asked: AtomicUsize::new(0),
            requests: Mutex::default(),
        })
    }
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl PermissionBroker for Recorder {
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request);
        self.decision.clone()
    }
}

/// Never answers.
struct Silent;

#[async_trait]
impl PermissionBroker for Silent {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        std::future::pending().await
    }
}

fn consent_rule(tool: &str, scope: PermissionScope) -> ToolRule {
    ToolRule::new(tool, ToolRuleKind::RequiresConsent { scope })
}

#[tokio::test]
async fn approve_once_asks_every_time() {
    let broker = Recorder::new(PermissionDecision::ApproveOnce);
    let ex = executor(&[echo("shell", SafetyTier::Privileged)], vec![])
        .with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "shell", r#"{"c":"ls"}"#),
        call("2", "shell", r#"{"c":"pwd"}"#),
    ];
    let r = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(r.all_succeeded());
    assert_eq!(broker.asked(), 2);
    let request = broker.requests.lock().unwrap()[0].clone();
    assert_eq!(request.tool_name, "shell");
    assert_eq!(request.tier, SafetyTier::Privileged);
    assert_eq!(request.arguments, serde_json::json!({"c": "ls"}));
    assert_eq!(request.scope, PermissionScope::Session);
    assert_eq!(request.session_id, ctx.session_id);
    assert_eq!(ex.state_stats().grants, 0);
}

#[tokio::test]
async fn a_tool_that_declares_consent_asks_without_a_rule() {
    let broker = Recorder::new(PermissionDecision::ApproveForScope);
    let note = echo("save_note", SafetyTier::SideEffecting).with_consent(PermissionScope::Session);
    let ex = executor(&[note], vec![]).with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "save_note", r#"{"v":1}"#),
        call("2", "save_note", r#"{"v":2}"#),
    ];
    assert!(
        ex.execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
            .await
            .all_succeeded()
    );
    // Asked once: the session-scoped grant covers the second call.
    assert_eq!(broker.asked(), 1);
    assert_eq!(
        broker.requests.lock().unwrap()[0].scope,
        PermissionScope::Session
    );

    // A rule for the tool decides instead of the declaration.
    let broker = Recorder::new(PermissionDecision::ApproveForScope);
    let note = echo("save_note", SafetyTier::SideEffecting).with_consent(PermissionScope::Session);
    let ex = executor(
        &[note],
        vec![consent_rule("save_note", PermissionScope::Arguments)],
    )
    .with_permission_broker(broker.clone());
    assert!(
        ex.execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 2);
    assert_eq!(
        broker.requests.lock().unwrap()[0].scope,
        PermissionScope::Arguments
    );
}

#[tokio::test]
async fn approve_for_scope_is_a_standing_grant_for_that_scope() {
    let broker = Recorder::new(PermissionDecision::ApproveForScope);
    let ex = executor(
        &[echo("deploy", SafetyTier::SideEffecting)],
        vec![consent_rule("deploy", PermissionScope::Session)],
    )
    .with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "deploy", r#"{"v":1}"#),
        call("2", "deploy", r#"{"v":2}"#),
    ];
    assert!(
        ex.execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 1);
    // Another session is another scope.
    assert!(
        ex.execute_batch(&calls[..1], &mut process, &common::ctx(), &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 2);
    // Revoking drops the grant.
    ex.revoke_grants("deploy");
    assert!(
        ex.execute_batch(&calls[..1], &mut process, &ctx, &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 3);
}

#[tokio::test]
async fn arguments_scope_covers_only_the_same_arguments() {
    let broker = Recorder::new(PermissionDecision::ApproveForScope);
    let ex = executor(
        &[echo("rm", SafetyTier::SideEffecting)],
        vec![consent_rule("rm", PermissionScope::Arguments)],
    )
    .with_permission_broker(broker.clone());
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "rm", r#"{"p":"a"}"#),
        call("2", "rm", r#"{"p":"a"}"#),
        call("3", "rm", r#"{"p":"b"}"#),
    ];
    assert!(
        ex.execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 2);
}

#[tokio::test]
async fn approve_for_duration_expires() {
    let broker = Recorder::new(PermissionDecision::ApproveForDuration(
        Duration::from_millis(40),
    ));
    let ex = executor(
        &[echo("shell", SafetyTier::Privileged)],
        vec![consent_rule("shell", PermissionScope::Tool)],
    )
    .with_permission_broker(broker.clone());
    let mut process = ex.new_process_state();
    let run = |id: &'static str| call(id, "shell", "{}");
    assert!(
        ex.execute_batch(&[run("1"), run("2")], &mut process, &ctx(), &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 1);
    tokio::time::sleep(Duration::from_millis(60)).await;
    ex.prune_expired();
    assert_eq!(ex.state_stats().grants, 0);
    assert!(
        ex.execute_batch(&[run("3")], &mut process, &ctx(), &NoopEventSink)
            .await
            .all_succeeded()
    );
    assert_eq!(broker.asked(), 2);
}

#[tokio::test]
async fn deny_and_timeout_and_missing_broker_are_denials() {
    let tools = [echo("shell", SafetyTier::Privileged)];
    let mut process = oxydra_executor::ProcessToolState::default();
    let denied = executor(&tools, vec![])
        .with_permission_broker(Arc::new(StaticBroker(PermissionDecision::Deny)));
    let r = denied
        .execute_batch(
            &[call("1", "shell", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(
        r.records[0]
            .content_for_model()
            .contains("the request was denied")
    );

    let config = ToolExecutorConfig {
        permission_timeout: Duration::from_millis(20),
        ..ToolExecutorConfig::default()
    };
    let silent = executor_with(&tools, vec![], config).with_permission_broker(Arc::new(Silent));
    let r = silent
        .execute_batch(
            &[call("2", "shell", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(matches!(
        r.records[0].outcome,
        Err(ToolExecutionError::PermissionDenied { .. })
    ));
    assert!(
        r.records[0]
            .content_for_model()
            .contains("permission timeout")
    );

    let none = executor(&tools, vec![]);
    let r = none
        .execute_batch(
            &[call("3", "shell", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(
        r.records[0]
            .content_for_model()
            .contains("no permission broker is configured"),
        "{}",
        r.records[0].content_for_model()
    );
    assert_eq!(tools[0].runs(), 0);
}

#[tokio::test]
async fn require_permissions_false_disables_only_the_privileged_default() {
    let tools = [
        echo("shell", SafetyTier::Privileged),
        echo("deploy", SafetyTier::SideEffecting),
    ];
    let config = ToolExecutorConfig {
        require_permissions: false,
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(
        &tools,
        vec![consent_rule("deploy", PermissionScope::Tool)],
        config,
    );
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "shell", "{}"), call("2", "deploy", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    assert!(matches!(
        r.records[1].outcome,
        Err(ToolExecutionError::PermissionDenied { .. })
    ));
}

#[tokio::test]
async fn read_only_and_side_effecting_tools_do_not_ask_by_default() {
    let broker = Recorder::new(PermissionDecision::Deny);
    let ex = executor(
        &[
            echo("r", SafetyTier::ReadOnly),
            echo("w", SafetyTier::SideEffecting),
        ],
        vec![],
    )
    .with_permission_broker(broker.clone());
    let r = ex
        .execute_batch(
            &[call("1", "r", "{}"), call("2", "w", "{}")],
            &mut ex.new_process_state(),
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.all_succeeded());
    assert_eq!(broker.asked(), 0);
    let approve = executor(&[echo("s", SafetyTier::Privileged)], vec![])
        .with_permission_broker(Arc::new(AlwaysApprove));
    let r = approve
        .execute_batch(
            &[call("3", "s", "{}")],
            &mut approve.new_process_state(),
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.all_succeeded());
}

#[tokio::test]
async fn the_request_carries_the_tools_preview() {
    let broker = Recorder::new(PermissionDecision::ApproveOnce);
    let ex = executor(&[echo("shell", SafetyTier::Privileged)], vec![])
        .with_permission_broker(broker.clone());
    let mut process = ex.new_process_state();
    let calls = [call("1", "shell", r#"{"c":"ls"}"#)];
    ex.execute_batch(&calls, &mut process, &ctx(), &NoopEventSink)
        .await;
    // A tool without a preview of its own: its arguments as JSON.
    let request = broker.requests.lock().unwrap()[0].clone();
    assert_eq!(
        request.preview,
        oxydra_tools::CallPreview::Arguments {
            json: "{\n  \"c\": \"ls\"\n}".into()
        }
    );
}

#[tokio::test]
async fn a_denial_with_a_reason_is_what_the_model_reads() {
    let broker = Recorder::new(PermissionDecision::DenyBecause(
        "  use `make clean` instead ".into(),
    ));
    let shell = echo("shell", SafetyTier::Privileged);
    let ex = executor(std::slice::from_ref(&shell), vec![]).with_permission_broker(broker);
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "shell", r#"{"c":"rm -rf build"}"#)],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert_eq!(shell.runs(), 0);
    let content = r.records[0].content_for_model();
    assert!(
        content.contains("denied: use `make clean` instead"),
        "{content}"
    );
}

/// Reports whether the batch's consent clock stood still while it was asked.
struct ClockWatcher {
    clock: oxydra_executor::ConsentClock,
    paused: Mutex<Vec<bool>>,
}

#[async_trait]
impl PermissionBroker for ClockWatcher {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        self.paused.lock().unwrap().push(self.clock.is_paused());
        PermissionDecision::ApproveOnce
    }
}

#[tokio::test]
async fn the_consent_clock_stands_still_while_the_broker_is_asked() {
    let ctx = ctx();
    let broker = Arc::new(ClockWatcher {
        clock: ctx.consent_clock.clone(),
        paused: Mutex::default(),
    });
    let ex = executor(&[echo("shell", SafetyTier::Privileged)], vec![])
        .with_permission_broker(broker.clone());
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "shell", r#"{"c":"ls"}"#)],
            &mut process,
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.all_succeeded());
    assert_eq!(*broker.paused.lock().unwrap(), [true]);
    // And runs again once the answer is in.
    assert!(!ctx.consent_clock.is_paused());
}
