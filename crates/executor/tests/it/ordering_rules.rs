//! The ordering rules: start constraints, preceding and following tools.

use crate::common;

use common::{batch, call, ctx, echo, executor, recorder, violation};
use oxydra_executor::{NoopEventSink, ToolRule, ToolRuleKind, ToolRuleViolation};
use oxydra_types::SafetyTier::{ReadOnly, SideEffecting};

#[tokio::test]
async fn start_constraint_runs_first_with_empty_args_and_gates_other_tools() {
    let (init, init_args) = recorder("init", SideEffecting);
    let ex = executor(
        &[init.clone(), echo("work", ReadOnly)],
        vec![ToolRule::new("init", ToolRuleKind::StartConstraint)],
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    assert!(!process.start_constraints_done());
    let r = batch(&ex, &[call("1", "work", "{}")], &mut process, &ctx).await;
    assert_eq!(
        violation(&r.records[0]),
        &ToolRuleViolation::StartConstraint {
            tool_name: "work".into(),
            pending: vec!["init".into()]
        }
    );
    let start = ex
        .execute_start_constraints(&mut process, &ctx, &NoopEventSink)
        .await;
    assert!(start.all_succeeded());
    assert_eq!(start.records[0].call.name, "init");
    assert_eq!(*init_args.lock().unwrap(), vec![serde_json::json!({})]);
    assert!(process.start_constraints_done());
    let r = batch(&ex, &[call("2", "work", "{}")], &mut process, &ctx).await;
    assert!(r.records[0].is_success());
    // Each process starts over.
    let mut next = ex.new_process_state();
    let r = batch(&ex, &[call("3", "work", r#"{"x":1}"#)], &mut next, &ctx).await;
    assert!(
        r.records[0]
            .content_for_model()
            .contains("rule start_constraint")
    );
}

#[tokio::test]
async fn requires_preceding_tools_checks_this_process_history() {
    let rules = vec![ToolRule::new(
        "write",
        ToolRuleKind::RequiresPrecedingTools(vec!["read".into()]),
    )];
    let ex = executor(
        &[echo("read", ReadOnly), echo("write", SideEffecting)],
        rules,
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let r = batch(&ex, &[call("1", "write", "{}")], &mut process, &ctx).await;
    assert_eq!(
        violation(&r.records[0]),
        &ToolRuleViolation::RequiresPrecedingTools {
            tool_name: "write".into(),
            missing: vec!["read".into()]
        }
    );
    let r = batch(
        &ex,
        &[call("2", "read", "{}"), call("3", "write", "{}")],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.all_succeeded());
    assert_eq!(
        process
            .history()
            .iter()
            .map(|h| h.tool_name.as_str())
            .collect::<Vec<_>>(),
        vec!["read", "write"]
    );
}

#[tokio::test]
async fn ordering_rules_between_read_only_tools_split_the_concurrent_group() {
    let rules = vec![ToolRule::new(
        "summarize",
        ToolRuleKind::RequiresPrecedingTools(vec!["fetch".into()]),
    )];
    let ex = executor(
        &[echo("fetch", ReadOnly), echo("summarize", ReadOnly)],
        rules,
    );
    let mut process = ex.new_process_state();
    let r = batch(
        &ex,
        &[call("1", "fetch", "{}"), call("2", "summarize", "{}")],
        &mut process,
        &ctx(),
    )
    .await;
    assert!(r.all_succeeded(), "{:?}", r.records[1].outcome);
    assert!(r.records[1].started_at >= r.records[0].finished_at);
}

#[tokio::test]
async fn requires_following_tools_refuses_once_a_follower_ran() {
    let rules = vec![ToolRule::new(
        "plan",
        ToolRuleKind::RequiresFollowingTools(vec!["write".into()]),
    )];
    let ex = executor(
        &[echo("plan", ReadOnly), echo("write", SideEffecting)],
        rules,
    );
    let ctx = ctx();
    let mut process = ex.new_process_state();
    let r = batch(
        &ex,
        &[call("1", "plan", "{}"), call("2", "write", "{}")],
        &mut process,
        &ctx,
    )
    .await;
    assert!(r.all_succeeded());
    let r = batch(
        &ex,
        &[call("3", "plan", r#"{"again":true}"#)],
        &mut process,
        &ctx,
    )
    .await;
    assert_eq!(
        violation(&r.records[0]),
        &ToolRuleViolation::RequiresFollowingTools {
            tool_name: "plan".into(),
            already_called: vec!["write".into()]
        }
    );
}

#[tokio::test]
async fn a_start_tool_whose_output_is_reused_meets_the_start_constraint() {
    // A read-only start tool, called again in a later process of the same session:
    // dedupe gives the model the earlier output, and that call counts as its run.
    let (init, init_args) = recorder("init", ReadOnly);
    let ex = executor(
        &[init, echo("work", ReadOnly)],
        vec![ToolRule::new("init", ToolRuleKind::StartConstraint)],
    );
    let ctx = ctx();
    let mut first = ex.new_process_state();
    ex.execute_start_constraints(&mut first, &ctx, &NoopEventSink)
        .await;
    assert!(first.start_constraints_done());

    let mut next = ex.new_process_state();
    assert!(!next.start_constraints_done());
    let r = batch(
        &ex,
        &[call("1", "init", "{}"), call("2", "work", "{}")],
        &mut next,
        &ctx,
    )
    .await;
    assert!(r.records[0].reused);
    assert!(r.records[1].is_success(), "{:?}", r.records[1].outcome);
    assert!(next.has_run("init"));
    assert!(next.start_constraints_done());
    assert_eq!(init_args.lock().unwrap().len(), 1);
}
