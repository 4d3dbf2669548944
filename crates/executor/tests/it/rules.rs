//! One or more tests per rule kind, with its scope.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{FnTool, call, ctx, echo, executor, recorder, violation};
use oxydra_executor::{
    ExecutionPhase, NoopEventSink, SessionRunId, ToolExecutionError, ToolRule, ToolRuleKind,
    ToolRuleViolation,
};
use oxydra_tools::ToolOutput;
use oxydra_types::SafetyTier::{ReadOnly, SideEffecting};

#[tokio::test]
async fn max_calls_is_per_session_run_and_survives_heartbeat_continuations() {
    let ex = executor(
        &[echo("t", SideEffecting)],
        vec![ToolRule::new("t", ToolRuleKind::MaxCalls(2))],
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "t", "{}"),
        call("2", "t", "{}"),
        call("3", "t", "{}"),
    ];
    let r = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(r.records[0].is_success() && r.records[1].is_success());
    assert_eq!(
        violation(&r.records[2]),
        &ToolRuleViolation::MaxCalls {
            tool_name: "t".into(),
            limit: 2
        }
    );
    // A heartbeat continuation: fresh process state, same session run — still refused.
    let mut continued = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("4", "t", "{}")],
            &mut continued,
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].content_for_model().contains("rule max_calls"));
    // A new session run starts counting again; so does a completed one.
    let next = ctx.clone().with_session_run(SessionRunId::next());
    let r = ex
        .execute_batch(
            &[call("5", "t", "{}")],
            &mut continued,
            &next,
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    ex.complete_session_run(ctx.session_run);
    let r = ex
        .execute_batch(
            &[call("6", "t", "{}")],
            &mut continued,
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
}

#[tokio::test]
async fn exclusive_group_allows_one_member_per_session_run() {
    let rules = vec![ToolRule::new(
        "file_write",
        ToolRuleKind::ExclusiveGroup(vec!["file_edit".into()]),
    )];
    let ex = executor(
        &[
            echo("file_write", SideEffecting),
            echo("file_edit", SideEffecting),
        ],
        rules,
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "file_edit", "{}"),
        call("2", "file_edit", r#"{"a":1}"#),
        call("3", "file_write", "{}"),
    ];
    let r = ex
        .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
        .await;
    assert!(r.records[0].is_success() && r.records[1].is_success());
    let ToolRuleViolation::ExclusiveGroup {
        used_by, members, ..
    } = violation(&r.records[2])
    else {
        panic!()
    };
    assert_eq!(used_by, "file_edit");
    assert_eq!(
        members,
        &vec!["file_edit".to_owned(), "file_write".to_owned()]
    );
    let r = ex
        .execute_batch(
            &[call("4", "file_write", "{}")],
            &mut process,
            &ctx.clone().with_session_run(SessionRunId::next()),
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
}

#[tokio::test]
async fn named_exclusive_groups_merge_across_rules() {
    let rules: Vec<ToolRule> = toml::from_str::<toml::Table>(
        r#"
        [[rules]]
        tool = "a"
        kind = "exclusive_group"
        group = "writers"
        [[rules]]
        tool = "b"
        kind = "exclusive_group"
        group = "writers"
        tools = []
        "#,
    )
    .unwrap()["rules"]
        .clone()
        .try_into()
        .unwrap();
    let ex = executor(&[echo("a", ReadOnly), echo("b", ReadOnly)], rules);
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "b", "{}"), call("2", "a", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    assert!(
        matches!(violation(&r.records[1]), ToolRuleViolation::ExclusiveGroup { used_by, .. } if used_by == "b")
    );
}

#[tokio::test]
async fn required_before_exit_runs_only_what_did_not_run() {
    let (save, save_args) = recorder("save", SideEffecting);
    let (flush, flush_args) = recorder("flush", SideEffecting);
    let rules = vec![
        ToolRule::new("save", ToolRuleKind::RequiredBeforeExit),
        ToolRule::new("flush", ToolRuleKind::RequiredBeforeExit),
    ];
    let ex = executor(&[save, flush], rules);
    let ctx = ctx();
    let mut process = ex.new_process_state();
    assert_eq!(
        process.exit_requirements_pending(),
        ["save".to_owned(), "flush".to_owned()]
    );
    ex.execute_batch(
        &[call("1", "flush", r#"{"now":1}"#)],
        &mut process,
        &ctx,
        &NoopEventSink,
    )
    .await;
    assert_eq!(process.exit_requirements_pending(), ["save".to_owned()]);
    let exit = ex
        .execute_exit_requirements(&mut process, &ctx, &NoopEventSink)
        .await;
    assert_eq!(exit.records.len(), 1);
    assert_eq!(exit.records[0].call.name, "save");
    assert_eq!(*save_args.lock().unwrap(), vec![serde_json::json!({})]);
    assert_eq!(flush_args.lock().unwrap().len(), 1);
    assert!(process.exit_requirements_pending().is_empty());
    assert_eq!(process.phase(), ExecutionPhase::Exited);
    assert!(ex.should_exit_loop(&process));
}

#[tokio::test]
async fn continue_loop_needs_no_heartbeat_and_requests_continuation() {
    let ex = executor(
        &[echo("think", ReadOnly), echo("read", ReadOnly)],
        vec![ToolRule::new("think", ToolRuleKind::ContinueLoop)],
    );
    assert!(!ex.requires_heartbeat("think"));
    assert!(ex.requires_heartbeat("read"));
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "read", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(!r.requests_continuation);
    let r = ex
        .execute_batch(
            &[call("2", "think", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.requests_continuation);
}

#[tokio::test]
async fn exit_loop_ends_the_loop_after_it_ran() {
    let ex = executor(
        &[echo("done", ReadOnly), echo("read", ReadOnly)],
        vec![ToolRule::new("done", ToolRuleKind::ExitLoop)],
    );
    let mut process = ex.new_process_state();
    ex.execute_batch(
        &[call("1", "read", "{}")],
        &mut process,
        &ctx(),
        &NoopEventSink,
    )
    .await;
    assert!(!ex.should_exit_loop(&process));
    ex.execute_batch(
        &[call("2", "done", "{}")],
        &mut process,
        &ctx(),
        &NoopEventSink,
    )
    .await;
    assert!(ex.should_exit_loop(&process));
    assert_eq!(process.phase(), ExecutionPhase::ExitRequested);
}

#[tokio::test]
async fn cooldown_is_persistent_across_session_runs_and_sessions() {
    let cooldown = Duration::from_millis(150);
    let ex = executor(
        &[echo("ping", SideEffecting)],
        vec![ToolRule::new("ping", ToolRuleKind::Cooldown(cooldown))],
    );
    let mut process = ex.new_process_state();
    let r = ex
        .execute_batch(
            &[call("1", "ping", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    let r = ex
        .execute_batch(
            &[call("2", "ping", "{}")],
            &mut ex.new_process_state(),
            &ctx(),
            &NoopEventSink,
        )
        .await;
    let ToolRuleViolation::Cooldown {
        remaining,
        cooldown: c,
        ..
    } = violation(&r.records[0])
    else {
        panic!()
    };
    assert_eq!(*c, cooldown);
    assert!(*remaining <= cooldown && !remaining.is_zero());
    tokio::time::sleep(cooldown + Duration::from_millis(20)).await;
    let r = ex
        .execute_batch(
            &[call("3", "ping", "{}")],
            &mut process,
            &ctx(),
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    ex.prune_expired();
    assert_eq!(ex.state_stats().cooldowns, 1);
}

#[tokio::test]
async fn refused_calls_do_not_consume_limits() {
    // A call refused by consent must not count against max_calls.
    let rules = vec![
        ToolRule::new("t", ToolRuleKind::MaxCalls(1)),
        ToolRule::new(
            "t",
            ToolRuleKind::RequiresConsent {
                scope: Default::default(),
            },
        ),
    ];
    let ex = executor(&[echo("t", SideEffecting)], rules);
    let ctx = ctx();
    let r = ex
        .execute_batch(
            &[call("1", "t", "{}")],
            &mut ex.new_process_state(),
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(matches!(
        r.records[0].outcome,
        Err(ToolExecutionError::PermissionDenied { .. })
    ));
    let ex = ex.with_permission_broker(Arc::new(oxydra_executor::AlwaysApprove));
    let r = ex
        .execute_batch(
            &[call("2", "t", "{}")],
            &mut ex.new_process_state(),
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
}

/// A tool that fails as its `mode` argument says: `error` (the tool returns an
/// error), `panic`, `hang` (runs into the execution timeout), anything else succeeds.
fn moody(name: &str, tier: oxydra_types::SafetyTier) -> FnTool {
    FnTool::new(name, tier, |args, _| async move {
        match args["mode"].as_str() {
            Some("error") => Err(oxydra_tools::ToolError::Failed("it broke".into())),
            Some("panic") => panic!("it blew up"),
            Some("hang") => {
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("never"))
            }
            _ => Ok(ToolOutput::text("ok")),
        }
    })
}

fn short_timeout() -> oxydra_executor::ToolExecutorConfig {
    oxydra_executor::ToolExecutorConfig {
        execution_timeout: Duration::from_millis(30),
        ..oxydra_executor::ToolExecutorConfig::default()
    }
}

#[tokio::test]
async fn failed_runs_do_not_consume_max_calls_or_start_the_cooldown() {
    let rules = vec![
        ToolRule::new("limited", ToolRuleKind::MaxCalls(1)),
        ToolRule::new("cool", ToolRuleKind::Cooldown(Duration::from_secs(60))),
    ];
    let ex = common::executor_with(
        &[
            moody("limited", SideEffecting),
            moody("cool", SideEffecting),
        ],
        rules,
        short_timeout(),
    );
    for tool in ["limited", "cool"] {
        let calls = [
            call("1", tool, r#"{"mode":"error"}"#),
            call("2", tool, r#"{"mode":"panic"}"#),
            call("3", tool, r#"{"mode":"hang"}"#),
            call("4", tool, r#"{"mode":"ok"}"#),
            call("5", tool, r#"{"mode":"ok","again":true}"#),
        ];
        let r = ex
            .execute_batch(&calls, &mut ex.new_process_state(), &ctx(), &NoopEventSink)
            .await;
        assert!(
            matches!(r.records[0].outcome, Err(ToolExecutionError::Failed(_))),
            "{tool}"
        );
        assert!(
            matches!(
                r.records[1].outcome,
                Err(ToolExecutionError::Panicked { .. })
            ),
            "{tool}"
        );
        assert!(
            matches!(
                r.records[2].outcome,
                Err(ToolExecutionError::Timeout { .. })
            ),
            "{tool}"
        );
        // The failures neither used up the one call nor started the cooldown ...
        assert!(
            r.records[3].is_success(),
            "{tool}: {:?}",
            r.records[3].outcome
        );
        // ... the successful run does.
        match (tool, violation(&r.records[4])) {
            ("limited", ToolRuleViolation::MaxCalls { limit: 1, .. })
            | ("cool", ToolRuleViolation::Cooldown { .. }) => {}
            (tool, other) => panic!("{tool}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn concurrent_calls_cannot_both_pass_max_calls_or_a_cooldown() {
    let rules = vec![
        ToolRule::new("limited", ToolRuleKind::MaxCalls(1)),
        ToolRule::new("cool", ToolRuleKind::Cooldown(Duration::from_secs(60))),
    ];
    let limited = moody("limited", ReadOnly);
    let cool = moody("cool", ReadOnly);
    let ex = common::executor_with(&[limited.clone(), cool.clone()], rules, short_timeout());
    let ctx = ctx();
    // Read-only calls with different arguments form one concurrent group: the first
    // call's reservation holds while it runs, so the second is refused.
    let calls = [
        call("1", "limited", r#"{"mode":"hang"}"#),
        call("2", "limited", r#"{"mode":"ok"}"#),
        call("3", "cool", r#"{"mode":"hang"}"#),
        call("4", "cool", r#"{"mode":"ok"}"#),
    ];
    let r = ex
        .execute_batch(&calls, &mut ex.new_process_state(), &ctx, &NoopEventSink)
        .await;
    assert!(matches!(
        r.records[0].outcome,
        Err(ToolExecutionError::Timeout { .. })
    ));
    assert!(matches!(
        violation(&r.records[1]),
        ToolRuleViolation::MaxCalls { .. }
    ));
    assert!(matches!(
        r.records[2].outcome,
        Err(ToolExecutionError::Timeout { .. })
    ));
    assert!(matches!(
        violation(&r.records[3]),
        ToolRuleViolation::Cooldown { .. }
    ));
    assert_eq!(limited.runs(), 1);
    assert_eq!(cool.runs(), 1);
    // The running calls failed, so their reservations were given back: in the same
    // session run, the tools may run again.
    let r = ex
        .execute_batch(
            &[
                call("5", "limited", r#"{"mode":"ok"}"#),
                call("6", "cool", r#"{"mode":"ok"}"#),
            ],
            &mut ex.new_process_state(),
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.all_succeeded(), "{:?}", r.records);
}

#[tokio::test]
async fn a_heartbeat_request_counts_only_from_a_call_that_ran() {
    let strict = echo("strict", ReadOnly).with_schema(serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": false
    }));
    let rules = vec![
        ToolRule::new("limited", ToolRuleKind::MaxCalls(1)),
        ToolRule::new(
            "guarded",
            ToolRuleKind::RequiresConsent {
                scope: Default::default(),
            },
        ),
    ];
    // No permission broker: consent is always refused.
    let ex = common::executor_with(
        &[
            strict,
            echo("limited", SideEffecting),
            echo("guarded", SideEffecting),
            moody("moody", SideEffecting),
        ],
        rules,
        short_timeout(),
    );
    let ctx = ctx();
    let cases: [(&str, Vec<oxydra_types::ToolCall>); 5] = [
        (
            "unknown tool",
            vec![call("1", "nope", r#"{"request_heartbeat":true}"#)],
        ),
        (
            "invalid arguments",
            vec![call("2", "strict", r#"{"b":1,"request_heartbeat":true}"#)],
        ),
        (
            "rule",
            vec![
                call("3", "limited", "{}"),
                call("4", "limited", r#"{"x":1,"request_heartbeat":true}"#),
            ],
        ),
        (
            "consent",
            vec![call("5", "guarded", r#"{"request_heartbeat":true}"#)],
        ),
        (
            "tool error",
            vec![call(
                "6",
                "moody",
                r#"{"mode":"error","request_heartbeat":true}"#,
            )],
        ),
    ];
    for (case, calls) in cases {
        let r = ex
            .execute_batch(&calls, &mut ex.new_process_state(), &ctx, &NoopEventSink)
            .await;
        assert!(r.records.last().unwrap().outcome.is_err(), "{case}");
        assert!(!r.requests_continuation, "{case}");
    }
    // The same request on a call that runs does continue.
    let r = ex
        .execute_batch(
            &[call("7", "strict", r#"{"a":1,"request_heartbeat":true}"#)],
            &mut ex.new_process_state(),
            &ctx,
            &NoopEventSink,
        )
        .await;
    assert!(r.records[0].is_success());
    assert!(r.requests_continuation);
}
