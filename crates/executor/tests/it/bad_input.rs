//! Every kind of bad input becomes a clear tool error, never a crash.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{FnTool, batch, call, ctx, echo, executor, executor_with};
use oxydra_executor::{ToolExecutionError, ToolExecutorConfig, ToolRule, ToolRuleKind};
use oxydra_tools::ToolOutput;
use oxydra_types::SafetyTier;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn file_read() -> FnTool {
    echo("file_read", SafetyTier::ReadOnly).with_schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"]
    }))
}

#[tokio::test]
async fn invalid_json_quotes_the_parse_error_and_position() {
    let tool = file_read();
    let ex = executor(std::slice::from_ref(&tool), vec![]);
    let mut process = ex.new_process_state();
    let result = batch(
        &ex,
        &[call("1", "file_read", "{\"path\": ")],
        &mut process,
        &ctx(),
    )
    .await;
    let text = result.records[0].content_for_model();
    assert!(
        text.starts_with("Tool execution failed: invalid arguments for tool `file_read`"),
        "{text}"
    );
    assert!(text.contains("not valid JSON"), "{text}");
    assert!(text.contains("line 1, column 9"), "{text}");
    assert!(text.contains("Expected schema: {"), "{text}");
    assert_eq!(tool.runs(), 0);
}

#[tokio::test]
async fn missing_required_field_names_path_keyword_and_schema() {
    let tool = file_read();
    let ex = executor(std::slice::from_ref(&tool), vec![]);
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("1", "file_read", "{}")], &mut process, &ctx()).await;
    let Err(ToolExecutionError::InvalidArguments {
        violations, schema, ..
    }) = &result.records[0].outcome
    else {
        panic!(
            "expected InvalidArguments, got {:?}",
            result.records[0].outcome
        );
    };
    assert_eq!(violations[0].path, "$.path");
    assert_eq!(violations[0].keyword, "required");
    assert!(schema.contains("\"required\":[\"path\"]"));
    let text = result.records[0].content_for_model();
    assert!(
        text.contains("at $.path: \"path\" is a required property (keyword: required"),
        "{text}"
    );
    assert_eq!(tool.runs(), 0);
}

#[tokio::test]
async fn wrong_type_says_expected_and_found() {
    let ex = executor(&[file_read()], vec![]);
    let mut process = ex.new_process_state();
    let result = batch(
        &ex,
        &[call("1", "file_read", r#"{"path": 42, "limit": "ten"}"#)],
        &mut process,
        &ctx(),
    )
    .await;
    let text = result.records[0].content_for_model();
    assert!(
        text.contains(
            "at $.path: 42 is not of type \"string\" (keyword: type; expected: string; found: 42)"
        ),
        "{text}"
    );
    assert!(text.contains("at $.limit"), "{text}");
    assert!(text.contains("expected: integer; found: \"ten\""), "{text}");
}

#[tokio::test]
async fn unknown_tool_lists_available_tools_and_does_not_split_groups() {
    // Both known tools wait on a barrier of 2: the batch only finishes if the unknown
    // tool between them did not split their read-only group.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let waiter = |name: &str| {
        let barrier = Arc::clone(&barrier);
        FnTool::new(name, SafetyTier::ReadOnly, move |_, _| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(ToolOutput::text("ok"))
            }
        })
    };
    let ex = executor(&[waiter("file_read"), waiter("clock")], vec![]);
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "file_read", "{}"),
        call("2", "file_raed", "{}"),
        call("3", "clock", "{}"),
    ];
    let result = tokio::time::timeout(
        Duration::from_secs(1),
        batch(&ex, &calls, &mut process, &ctx()),
    )
    .await
    .expect("the two read-only calls must run together");
    let Err(ToolExecutionError::NotFound {
        tool_name,
        available,
    }) = &result.records[1].outcome
    else {
        panic!("expected NotFound");
    };
    assert_eq!(tool_name, "file_raed");
    assert_eq!(available, &vec!["clock".to_owned(), "file_read".to_owned()]);
    assert!(
        result.records[1]
            .content_for_model()
            .contains("available tools: clock, file_read")
    );
    assert!(result.records[1].tier.is_none());
    assert!(result.records[0].is_success() && result.records[2].is_success());
}

#[tokio::test]
async fn a_schema_that_does_not_compile_is_a_clear_error_not_a_panic() {
    let broken = echo("broken", SafetyTier::ReadOnly).with_schema(json!({"type": 12}));
    let ex = executor(std::slice::from_ref(&broken), vec![]);
    let mut process = ex.new_process_state();
    let result = batch(
        &ex,
        &[call("1", "broken", "{}"), call("2", "broken", "{}")],
        &mut process,
        &ctx(),
    )
    .await;
    for record in &result.records {
        let text = record.content_for_model();
        assert!(
            text.contains("tool `broken` has an invalid parameter schema"),
            "{text}"
        );
    }
    assert_eq!(broken.runs(), 0);
    assert_eq!(ex.state_stats().compiled_schemas, 1);
}

#[tokio::test]
async fn rule_violation_names_the_rule() {
    let ex = executor(
        &[echo("t", SafetyTier::ReadOnly)],
        vec![ToolRule::new("t", ToolRuleKind::MaxCalls(1))],
    );
    let mut process = ex.new_process_state();
    let calls = [call("1", "t", r#"{"a":1}"#), call("2", "t", r#"{"a":2}"#)];
    let result = batch(&ex, &calls, &mut process, &ctx()).await;
    assert!(result.records[0].is_success());
    let text = result.records[1].content_for_model();
    assert!(text.contains("rule max_calls refused `t`"), "{text}");
}

#[tokio::test]
async fn denied_consent_is_a_tool_error() {
    let ex = executor(&[echo("shell_exec", SafetyTier::Privileged)], vec![])
        .with_permission_broker(Arc::new(oxydra_executor::AlwaysDeny));
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("1", "shell_exec", "{}")], &mut process, &ctx()).await;
    let text = result.records[0].content_for_model();
    assert!(
        text.contains("permission denied for tool `shell_exec`"),
        "{text}"
    );
    assert!(text.contains("denied"), "{text}");
}

#[tokio::test]
async fn timeout_stops_a_tool_that_never_finishes_and_cancels_its_token() {
    let seen: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let slot = Arc::clone(&seen);
    let forever = FnTool::new("forever", SafetyTier::ReadOnly, move |_, tool_ctx| {
        *slot.lock().unwrap() = Some(tool_ctx.cancel.clone());
        async move {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        }
    });
    let config = ToolExecutorConfig {
        execution_timeout: Duration::from_millis(30),
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(&[forever], vec![], config);
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("1", "forever", "{}")], &mut process, &ctx()).await;
    assert!(matches!(
        result.records[0].outcome,
        Err(ToolExecutionError::Timeout { duration, .. }) if duration == Duration::from_millis(30)
    ));
    assert!(
        result.records[0]
            .content_for_model()
            .contains("timed out after 30 ms")
    );
    assert!(seen.lock().unwrap().as_ref().unwrap().is_cancelled());
}

#[tokio::test]
async fn a_tool_that_bounds_its_own_calls_is_not_cut_off_by_the_shorter_executor_timeout() {
    // Like shell_exec with a long timeout_secs: the tool's own limit wins, so its own
    // timeout (with whatever output it has) fires first.
    let slow = FnTool::new("slow", SafetyTier::ReadOnly, |_, _| async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok(ToolOutput::text("finished"))
    });
    let config = ToolExecutorConfig {
        execution_timeout: Duration::from_millis(30),
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(
        &[slow.clone().with_own_limit(Duration::from_secs(5))],
        vec![],
        config.clone(),
    );
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("1", "slow", "{}")], &mut process, &ctx()).await;
    assert_eq!(result.records[0].content_for_model(), "finished");

    // Without a limit of its own, the executor's timeout applies.
    let ex = executor_with(&[slow], vec![], config);
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("1", "slow", "{}")], &mut process, &ctx()).await;
    assert!(matches!(
        result.records[0].outcome,
        Err(ToolExecutionError::Timeout { .. })
    ));
}

#[tokio::test]
async fn a_panicking_tool_is_caught_and_the_executor_keeps_working() {
    let bomb = FnTool::new("bomb", SafetyTier::ReadOnly, |_, _| async {
        if true {
            panic!("kaboom");
        }
        Ok(ToolOutput::text("unreachable"))
    });
    let ex = executor(&[bomb, echo("ok", SafetyTier::ReadOnly)], vec![]);
    let mut process = ex.new_process_state();
    let calls = [call("1", "bomb", "{}"), call("2", "ok", "{}")];
    let result = batch(&ex, &calls, &mut process, &ctx()).await;
    assert!(matches!(
        &result.records[0].outcome,
        Err(ToolExecutionError::Panicked { tool_name, message }) if tool_name == "bomb" && message == "kaboom"
    ));
    assert!(result.records[1].is_success());
    let again = batch(&ex, &[call("3", "ok", r#"{"x":1}"#)], &mut process, &ctx()).await;
    assert!(again.records[0].is_success());
}

#[tokio::test]
async fn cancellation_ends_running_calls_promptly_and_skips_pending_ones() {
    let forever = FnTool::new("forever", SafetyTier::ReadOnly, |_, _| async {
        std::future::pending::<()>().await;
        Ok(ToolOutput::text("never"))
    });
    let write = echo("write", SafetyTier::SideEffecting);
    let ex = executor(&[forever, write.clone()], vec![]);
    let mut process = ex.new_process_state();
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let calls = [call("1", "forever", "{}"), call("2", "write", "{}")];
    let result = tokio::time::timeout(
        Duration::from_secs(1),
        batch(&ex, &calls, &mut process, &ctx),
    )
    .await
    .expect("cancellation must be prompt");
    assert!(matches!(
        result.records[0].outcome,
        Err(ToolExecutionError::Cancelled)
    ));
    assert!(matches!(
        result.records[1].outcome,
        Err(ToolExecutionError::Cancelled)
    ));
    assert_eq!(write.runs(), 0);
}

#[tokio::test]
async fn heartbeat_is_stripped_and_reported() {
    let strict = echo("strict", SafetyTier::ReadOnly)
        .with_schema(json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}));
    let ex = executor(&[strict], vec![]);
    let mut process = ex.new_process_state();
    let result = batch(
        &ex,
        &[call("1", "strict", r#"{"a":1,"request_heartbeat":true}"#)],
        &mut process,
        &ctx(),
    )
    .await;
    assert_eq!(result.records[0].content_for_model(), "strict:{\"a\":1}");
    assert!(result.requests_continuation);
    let plain = batch(
        &ex,
        &[call("2", "strict", r#"{"a":2}"#)],
        &mut process,
        &ctx(),
    )
    .await;
    assert!(!plain.requests_continuation);
}

/// The attack: the model names a tool a megabyte long; the error that echoes the name
/// reaches the model and the `tool_failed` event cut to `MAX_ERROR_BYTES`, with the
/// output truncation marker.
#[tokio::test]
async fn a_megabyte_error_is_cut_for_the_model_and_the_event() {
    let tool = file_read();
    let ex = executor(std::slice::from_ref(&tool), vec![]);
    let mut process = ex.new_process_state();
    let name = "n".repeat(1_000_000);
    let events = oxydra_executor::CollectingEventSink::new();
    let result = ex
        .execute_batch(&[call("1", &name, "{}")], &mut process, &ctx(), &events)
        .await;
    let limit = oxydra_executor::MAX_ERROR_BYTES;
    let text = result.records[0].content_for_model();
    assert!(
        text.starts_with("Tool execution failed: unknown tool `nnn"),
        "{}",
        &text[..80]
    );
    assert!(text.len() < limit + 100, "{} bytes", text.len());
    assert!(
        text.contains("[... truncated "),
        "{}",
        &text[text.len() - 80..]
    );
    let failed = events
        .events()
        .into_iter()
        .find_map(|event| match event {
            oxydra_types::RuntimeEvent::ToolFailed { error, .. } => Some(error),
            _ => None,
        })
        .unwrap();
    assert!(failed.len() < limit + 100, "{} bytes", failed.len());
    assert!(
        failed.ends_with(" bytes ...]"),
        "{}",
        &failed[failed.len() - 80..]
    );
}
