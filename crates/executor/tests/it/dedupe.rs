//! Dedupe (docs/executor.md).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{FnTool, batch, call, ctx, echo, executor, executor_with};
use oxydra_executor::{
    AlwaysApprove, CollectingEventSink, REUSED_OUTPUT_MARKER, ToolExecutionError,
    ToolExecutorConfig, ToolRule, ToolRuleKind,
};
use oxydra_tools::ToolOutput;
use oxydra_types::{RuntimeEvent, SafetyTier};

/// A read-only tool whose output changes on every run.
fn counter(name: &str) -> FnTool {
    let n = Arc::new(AtomicUsize::new(0));
    FnTool::new(name, SafetyTier::ReadOnly, move |_, _| {
        let value = n.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::text(format!("run {value}"))) }
    })
}

#[tokio::test]
async fn a_duplicate_read_reuses_the_output_until_a_side_effect_runs() {
    let read = counter("read");
    let write = echo("write", SafetyTier::SideEffecting);
    let ex = executor(&[read.clone(), write], vec![]);
    let ctx = ctx();
    let mut process = ex.new_process_state();
    // Same args in a different key order, in the same batch: the second reuses the first.
    let calls = [
        call("1", "read", r#"{"a":1,"b":2}"#),
        call("2", "read", r#"{"b":2,"a":1}"#),
    ];
    let sink = CollectingEventSink::new();
    let r = ex.execute_batch(&calls, &mut process, &ctx, &sink).await;
    assert_eq!(r.records[0].content_for_model(), "run 0");
    // The model is told the output is a reused one.
    assert_eq!(
        r.records[1].content_for_model(),
        "[reused output of an identical call made earlier in this session]\nrun 0"
    );
    assert_eq!(
        r.records[1].content_for_model(),
        format!("{REUSED_OUTPUT_MARKER}run 0")
    );
    // The output itself is unchanged.
    assert_eq!(r.records[1].outcome.as_ref().unwrap().content, "run 0");
    assert!(!r.records[0].reused && r.records[1].reused);
    assert_eq!(read.runs(), 1);
    assert!(
        sink.take()
            .iter()
            .filter(|e| matches!(e, RuntimeEvent::ToolCompleted { .. }))
            .count()
            == 2
    );
    // And in a later batch.
    let r = batch(
        &ex,
        &[call("3", "read", r#"{"a":1,"b":2}"#)],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.records[0].reused);
    assert_eq!(read.runs(), 1);
    // A side effect clears the session's read cache.
    let r = batch(
        &ex,
        &[
            call("4", "write", "{}"),
            call("5", "read", r#"{"a":1,"b":2}"#),
        ],
        &mut process,
        &ctx,
    )
    .await;
    assert_eq!(r.records[1].content_for_model(), "run 1");
    assert!(!r.records[1].reused);
    assert_eq!(read.runs(), 2);
}

#[tokio::test]
async fn dedupe_is_scoped_to_the_session_and_different_args_run() {
    let read = counter("read");
    let ex = executor(std::slice::from_ref(&read), vec![]);
    let mut process = ex.new_process_state();
    let first = ctx();
    batch(
        &ex,
        &[call("1", "read", r#"{"a":1}"#)],
        &mut process,
        &first,
    )
    .await;
    batch(
        &ex,
        &[call("2", "read", r#"{"a":2}"#)],
        &mut process,
        &first,
    )
    .await;
    let r = batch(
        &ex,
        &[call("3", "read", r#"{"a":1}"#)],
        &mut process,
        &ctx(),
    )
    .await;
    assert!(!r.records[0].reused);
    assert_eq!(read.runs(), 3);
}

#[tokio::test]
async fn heartbeat_does_not_change_the_dedupe_key() {
    let read = counter("read");
    let ex = executor(std::slice::from_ref(&read), vec![]);
    let ctx = ctx();
    let mut process = ex.new_process_state();
    batch(&ex, &[call("1", "read", r#"{"a":1}"#)], &mut process, &ctx).await;
    let r = batch(
        &ex,
        &[call("2", "read", r#"{"a":1,"request_heartbeat":true}"#)],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.records[0].reused);
    assert!(r.requests_continuation);
}

#[tokio::test]
async fn never_dedupe_opts_a_read_out() {
    let clock = counter("clock");
    let ex = executor(
        std::slice::from_ref(&clock),
        vec![ToolRule::new("clock", ToolRuleKind::NeverDedupe)],
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let r = batch(
        &ex,
        &[call("1", "clock", "{}"), call("2", "clock", "{}")],
        &mut process,
        &ctx,
    )
    .await;
    assert_eq!(r.records[1].content_for_model(), "run 1");
    assert_eq!(clock.runs(), 2);
}

#[tokio::test]
async fn side_effects_repeat_unless_opted_in_and_then_a_duplicate_is_refused() {
    let write = echo("write", SafetyTier::SideEffecting);
    let send = echo("send", SafetyTier::SideEffecting);
    let ex = executor(
        &[write.clone(), send.clone()],
        vec![ToolRule::new("send", ToolRuleKind::Dedupe)],
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "write", r#"{"x":1}"#),
        call("2", "write", r#"{"x":1}"#),
        call("3", "send", r#"{"to":"a"}"#),
        call("4", "send", r#"{"to":"a"}"#),
        call("5", "send", r#"{"to":"b"}"#),
    ];
    let r = batch(&ex, &calls, &mut process, &ctx).await;
    assert_eq!(write.runs(), 2);
    assert_eq!(send.runs(), 2);
    assert!(r.records[2].is_success() && r.records[4].is_success());
    assert!(
        matches!(&r.records[3].outcome, Err(ToolExecutionError::Deduplicated { tool_name, .. }) if tool_name == "send")
    );
    assert!(
        r.records[3]
            .content_for_model()
            .contains("side effect already happened")
    );
}

#[tokio::test]
async fn a_failed_side_effect_is_not_remembered_and_a_privileged_run_clears_reads() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&attempts);
    let flaky = FnTool::new("flaky", SafetyTier::SideEffecting, move |_, _| {
        let first = a.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                Err(oxydra_tools::ToolError::Failed("disk full".into()))
            } else {
                Ok(ToolOutput::text("ok"))
            }
        }
    });
    let read = counter("read");
    let shell = echo("shell", SafetyTier::Privileged);
    let ex = executor(
        &[flaky, read.clone(), shell],
        vec![ToolRule::new("flaky", ToolRuleKind::Dedupe)],
    )
    .with_permission_broker(Arc::new(AlwaysApprove));
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let r = batch(
        &ex,
        &[call("1", "flaky", "{}"), call("2", "flaky", "{}")],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.records[0].content_for_model().contains("disk full"));
    assert!(r.records[1].is_success());
    batch(&ex, &[call("3", "read", "{}")], &mut process, &ctx).await;
    let r = batch(
        &ex,
        &[call("4", "shell", "{}"), call("5", "read", "{}")],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.all_succeeded());
    assert!(!r.records[1].reused);
    assert_eq!(read.runs(), 2);
}

#[tokio::test]
async fn entries_expire_after_the_window() {
    let read = counter("read");
    let config = ToolExecutorConfig {
        dedupe_window: Duration::from_millis(40),
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(std::slice::from_ref(&read), vec![], config);
    let ctx = ctx();
    let mut process = ex.new_process_state();
    batch(&ex, &[call("1", "read", "{}")], &mut process, &ctx).await;
    assert_eq!(ex.state_stats().dedupe_sessions, 1);
    tokio::time::sleep(Duration::from_millis(60)).await;
    let r = batch(&ex, &[call("2", "read", "{}")], &mut process, &ctx).await;
    assert!(!r.records[0].reused);
    tokio::time::sleep(Duration::from_millis(60)).await;
    ex.prune_expired();
    assert_eq!(ex.state_stats().dedupe_sessions, 0);
}
