//! Command hooks (feature `command-hooks`) through the public API: real `sh` commands
//! made hooks by `CommandHooks`, registered with the executor, deciding tool calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use oxydra_executor::{
    BeforeToolDecision, CollectingEventSink, CommandHookConfig, CommandHooks, Hook, HookChain,
    HookError, HookPoint, ToolExecutionError, ToolHookCall,
};
use oxydra_tools::{SandboxConfig, SandboxMode, ToolOutput};
use oxydra_types::{CallId, SafetyTier, SessionId};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{FnTool, call, ctx, executor};

fn open_sandbox() -> SandboxConfig {
    SandboxConfig {
        mode: SandboxMode::FullAccess,
        ..SandboxConfig::default()
    }
}

fn sh(point: HookPoint, script: &str) -> CommandHookConfig {
    CommandHookConfig::new(point, ["sh", "-c", script])
}

fn hook_call(tool: &str, arguments: serde_json::Value) -> ToolHookCall {
    ToolHookCall {
        session_id: SessionId::generate(),
        call_id: CallId::from("1"),
        tool_name: tool.into(),
        arguments,
    }
}

/// A tool `read` taking a string `path`, answering `read:{args}`.
fn reader() -> FnTool {
    FnTool::new("read", SafetyTier::ReadOnly, |args, _| async move {
        Ok(ToolOutput::text(format!("read:{args}")))
    })
    .with_schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": false
    }))
}

#[tokio::test]
async fn a_command_hook_denies_rewrites_and_allows_calls_of_the_executor() {
    let workspace = tempfile::tempdir().unwrap();
    // Reads the event from stdin: denies `secret`, rewrites `old` into `new`.
    let guard = sh(
        HookPoint::BeforeTool,
        r#"input=$(cat)
case "$input" in
  *'"path":"secret"'*) echo '{"decision":"block","reason":"not that file"}' ;;
  *'"path":"old"'*) echo '{"hookSpecificOutput":{"updatedInput":{"path":"new"}}}' ;;
esac"#,
    );
    let hooks = CommandHooks::new(workspace.path(), open_sandbox()).hooks([guard]);
    let tool = reader();
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(HookChain::new(hooks));
    let mut process = executor.new_process_state();
    let events = CollectingEventSink::new();
    let result = executor
        .execute_batch(
            &[
                call("1", "read", r#"{"path":"secret"}"#),
                call("2", "read", r#"{"path":"old"}"#),
                call("3", "read", r#"{"path":"a"}"#),
            ],
            &mut process,
            &ctx(),
            &events,
        )
        .await;
    assert!(matches!(
        result.records[0].error(),
        Some(ToolExecutionError::HookDenied { .. })
    ));
    assert_eq!(
        result.records[0].content_for_model(),
        "Tool execution failed: hook `sh` denied `read`: not that file"
    );
    assert_eq!(
        result.records[1].content_for_model(),
        r#"read:{"path":"new"}"#
    );
    assert_eq!(
        result.records[2].content_for_model(),
        r#"read:{"path":"a"}"#
    );
    assert_eq!(tool.runs(), 2);
}

#[tokio::test]
async fn an_answer_that_is_no_json_object_denies_the_call() {
    let workspace = tempfile::tempdir().unwrap();
    let hooks = CommandHooks::new(workspace.path(), open_sandbox());
    for answer in [
        "[null,null,null,null,null,null,null]",
        "null",
        "7",
        "not json",
    ] {
        let hook = hooks.hook(sh(HookPoint::BeforeTool, &format!("echo '{answer}'")));
        let error = hook
            .before_tool(
                &hook_call("read", json!({"path": "a"})),
                &CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(error, HookError::InvalidDecision { .. }),
            "{answer}: {error:?}"
        );
    }
    // Through the executor: an invalid decision of a `before_tool` hook denies.
    let tool = reader();
    let hook = hooks.hooks([sh(HookPoint::BeforeTool, "echo '[null,null]'")]);
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(HookChain::new(hook));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(tool.runs(), 0);
    assert!(
        result.records[0]
            .content_for_model()
            .contains("not a JSON object"),
        "{}",
        result.records[0].content_for_model()
    );
}

#[tokio::test]
async fn a_hook_starts_in_its_launch_directory_and_only_at_its_point_and_tools() {
    let workspace = tempfile::tempdir().unwrap();
    let launch = tempfile::tempdir().unwrap();
    let hooks = CommandHooks::new(workspace.path(), open_sandbox()).launch_dir(launch.path());
    // The reason says where it ran and whether the interpreter settings were removed.
    let mut config = sh(
        HookPoint::BeforeTool,
        r#"cat >/dev/null; printf '{"decision":"block","reason":"%s %s"}' "$(pwd)" "${PYTHONPATH-unset}""#,
    );
    config.matcher = Some(vec!["shell_exec".into()]);
    let hook = hooks.hook(config);
    let cancel = CancellationToken::new();
    let decision = hook
        .before_tool(&hook_call("shell_exec", json!({})), &cancel)
        .await
        .unwrap();
    let cwd = launch.path().canonicalize().unwrap();
    assert_eq!(
        decision,
        BeforeToolDecision::Deny {
            reason: format!("{} unset", cwd.display())
        }
    );
    // Another tool, or another point: the command does not run.
    let other = hook
        .before_tool(&hook_call("file_read", json!({})), &cancel)
        .await
        .unwrap();
    assert_eq!(other, BeforeToolDecision::Allow);
    let after = hook
        .after_tool(
            &hook_call("shell_exec", json!({})),
            &ToolOutput::text("x"),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(after, oxydra_executor::AfterToolDecision::Keep);
}

#[tokio::test]
async fn nothing_a_hook_starts_outlives_it() {
    let workspace = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    let late = marks.path().join("late");
    let script = format!(
        "(sleep 1; touch '{}') >/dev/null 2>&1 </dev/null &\necho '{{}}'",
        late.display()
    );
    let hook = CommandHooks::new(workspace.path(), open_sandbox())
        .hook(sh(HookPoint::BeforeTool, &script));
    let decision = hook
        .before_tool(&hook_call("read", json!({})), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(decision, BeforeToolDecision::Allow);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!late.exists(), "a process the hook started outlived it");
}

#[tokio::test]
async fn relative_words_are_anchored_and_a_timeout_fails_the_hook() {
    let workspace = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    std::fs::write(
        scripts.path().join("guard.sh"),
        "cat >/dev/null; echo '{\"decision\":\"block\",\"reason\":\"from the script\"}'\n",
    )
    .unwrap();
    let hooks = CommandHooks::new(workspace.path(), open_sandbox())
        .anchored_in(vec![scripts.path().to_path_buf()]);
    let hook = hooks.hook(CommandHookConfig::new(
        HookPoint::BeforeTool,
        ["sh", "guard.sh"],
    ));
    assert_eq!(
        Path::new(&hook.config().command[1]),
        scripts.path().join("guard.sh")
    );
    let cancel = CancellationToken::new();
    assert_eq!(
        hook.before_tool(&hook_call("read", json!({})), &cancel)
            .await
            .unwrap(),
        BeforeToolDecision::Deny {
            reason: "from the script".into()
        }
    );
    let mut slow = sh(HookPoint::BeforeTool, "sleep 30");
    slow.timeout_secs = Some(0.2);
    let hooks: Vec<Arc<dyn Hook>> = hooks.hooks([slow]);
    let error = hooks[0]
        .before_tool(&hook_call("read", json!({})), &cancel)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        HookError::TimedOut {
            after: Duration::from_millis(200)
        }
    );
}
