//! `shell_exec`: exit codes, output, the workspace as cwd, and process groups killed
//! on timeout and cancellation.

use std::path::Path;
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

/// Whether `pid` is a live process (not gone, not a zombie awaiting its reaper).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(") ")
                .next()
                .and_then(|rest| rest.chars().next());
            !matches!(state, Some('Z' | 'X'))
        }
    }
}

/// Wait (briefly) until `file` holds a pid, and return it.
async fn read_pid(file: &Path) -> u32 {
    for _ in 0..200 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no pid written to {}", file.display());
}

/// Wait (at most ~1 s) for `pid` to die.
async fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
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
    let (dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let started = Instant::now();
    let err = tool
        .execute(
            json!({"command": "echo before; sleep 30 & echo $! > bg.pid; sleep 30", "timeout_secs": 1}),
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
    let pid = read_pid(&dir.path().join("bg.pid")).await;
    assert!(
        gone(pid).await,
        "background sleep {pid} survived the timeout"
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
    let (dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let cancel = ctx.cancel.clone();
    let pid_file = dir.path().join("bg.pid");
    let call = tokio::spawn(async move {
        tool.execute(
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
            &ctx,
        )
        .await
    });
    let pid = read_pid(&pid_file).await;
    assert!(alive(pid));
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, ToolError::Cancelled), "{err}");
    assert!(
        gone(pid).await,
        "background sleep {pid} survived cancellation"
    );
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_call() {
    let (dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let started = Instant::now();
    let out = tool
        .execute(
            json!({"command": "sleep 30 & echo $! > bg.pid; echo done"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out.content, "exit code: 0\nstdout:\ndone\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the open pipe was not waited on"
    );
    let pid = read_pid(&dir.path().join("bg.pid")).await;
    assert!(gone(pid).await, "background sleep {pid} survived the call");
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_group() {
    let (dir, ctx) = workspace();
    let tool = ShellExec::new(&BuiltinToolsConfig::default());
    let pid_file = dir.path().join("bg.pid");
    let call = tokio::spawn(async move {
        tool.execute(
            json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
            &ctx,
        )
        .await
    });
    let pid = read_pid(&pid_file).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert!(
        gone(pid).await,
        "background sleep {pid} survived the dropped call"
    );
}
