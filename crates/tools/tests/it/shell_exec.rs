//! `shell_exec`: exit codes, output, the workspace as cwd, and process groups killed
//! on timeout and cancellation.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use oxydra_tools::builtin::ShellExec;
use oxydra_tools::{BuiltinToolsConfig, Tool, ToolContext, ToolError};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn workspace() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "call-shell".into());
    (dir, ctx)
}

/// A `sleep` duration no other process on the machine uses: the processes a test's
/// command starts are found by it in `/proc/*/cmdline` (the command's own pids are
/// those of its PID namespace, not the machine's).
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "30.{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn alive(marker: &str) -> bool {
    oxydra_test_support::processes::running_with_argument(marker)
}

/// Wait (briefly) until a process with `marker` runs.
async fn started(marker: &str) {
    for _ in 0..400 {
        if alive(marker) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no process with {marker} started");
}

/// Wait (at most ~1 s) until no process with `marker` is left.
async fn gone(marker: &str) -> bool {
    for _ in 0..100 {
        if !alive(marker) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn exit_code_stdout_and_stderr_are_reported() {
    let (_dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let out = tool
        .execute(
            json!({"command": "printf 'a\\nb\\n'; echo oops >&2; exit 7"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.content, "exit code: 7\nstdout:\na\nb\nstderr:\noops\n");
    let out = tool
        .execute(json!({"command": "echo only"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "exit code: 0\nstdout:\nonly\n");
}

#[tokio::test]
async fn cwd_is_the_workspace() {
    let (dir, ctx) = workspace();
    std::fs::write(dir.path().join("marker.txt"), "here").unwrap();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let out = tool
        .execute(json!({"command": "cat marker.txt; pwd -P"}), &ctx)
        .await
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        out.content,
        format!("exit code: 0\nstdout:\nhere{}\n", root.display())
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let (_dir, ctx) = workspace();
    let bg = marker();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let started = Instant::now();
    let err = tool
        .execute(
            json!({"command": format!("echo before; sleep {bg} & sleep 30"), "timeout_secs": 1}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    match &err {
        ToolError::CommandTimedOut {
            secs,
            partial_output,
        } => {
            assert_eq!(*secs, 1);
            assert!(partial_output.contains("before"), "{partial_output}");
        }
        other => panic!("expected CommandTimedOut, got {other:?}"),
    }
    assert!(err.to_string().starts_with("command timed out after 1 s"));
    assert!(
        gone(&bg).await,
        "background sleep {bg} survived the timeout"
    );
}

#[tokio::test]
async fn timeout_is_capped_by_the_configuration() {
    let (_dir, ctx) = workspace();
    let mut config = BuiltinToolsConfig::default();
    config.shell.max_timeout_secs = 1;
    let started = Instant::now();
    let err = ShellExec::new(&config)
        .execute(json!({"command": "sleep 30", "timeout_secs": 3600}), &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::CommandTimedOut { secs: 1, .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn cancellation_kills_the_whole_group() {
    let (_dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let cancel = ctx.cancel.clone();
    let bg = marker();
    let command = format!("sleep {bg} & sleep 30");
    let call = tokio::spawn(async move { tool.execute(json!({ "command": command }), &ctx).await });
    started(&bg).await;
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, ToolError::Cancelled), "{err}");
    assert!(
        gone(&bg).await,
        "background sleep {bg} survived cancellation"
    );
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_call() {
    let (_dir, ctx) = workspace();
    let bg = marker();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let started = Instant::now();
    let out = tool
        .execute(json!({"command": format!("sleep {bg} & echo done")}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "exit code: 0\nstdout:\ndone\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the open pipe was not waited on"
    );
    assert!(gone(&bg).await, "background sleep {bg} survived the call");
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let (_dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let bg = marker();
    let command = format!("sleep {bg} & sleep 30");
    let call = tokio::spawn(async move { tool.execute(json!({ "command": command }), &ctx).await });
    started(&bg).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert!(
        gone(&bg).await,
        "background sleep {bg} survived the dropped call"
    );
}
