//! Servers that never start: no node needed.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
use oxydra_tools::{ToolContext, ToolRegistry};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_server_that_never_speaks_mcp_times_out_at_init() {
    let mut config = McpServerConfig::stdio("mute", "sleep", ["5"]);
    config.init_timeout_secs = 1;
    config.restart_attempts = 1;
    let started = Instant::now();
    let manager = McpManager::start(vec![config]).await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_millis(1800),
        "{elapsed:?}"
    );
    let status = &manager.status()[0];
    match &status.state {
        ServerState::Failed { reason } => assert!(
            reason
                .contains("MCP server `mute` did not complete the initialize handshake within 1 s"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(status.tools.is_empty());
    assert!(manager.server_pid("mute").is_none());
    let mut registry = ToolRegistry::new();
    assert!(manager.register_tools(&mut registry).unwrap().is_empty());
}

#[tokio::test]
async fn a_missing_program_or_a_crashing_server_is_a_clear_failure() {
    let mut missing = McpServerConfig::stdio("ghost", "/nonexistent/mcp-server", ["x"]);
    missing.restart_attempts = 2;
    missing.restart_backoff_ms = 10;
    let mut crash =
        McpServerConfig::stdio("crash", "sh", ["-c", "echo 'fatal: no config' >&2; exit 3"]);
    crash.restart_attempts = 1;
    let manager = McpManager::start(vec![missing, crash]).await.unwrap();
    let status = manager.status();
    let reason = |i: usize| match &status[i].state {
        ServerState::Failed { reason } => reason.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        reason(0).contains("could not start `/nonexistent/mcp-server`"),
        "{}",
        reason(0)
    );
    assert!(reason(1).contains("initialize failed"), "{}", reason(1));
    assert!(
        reason(1).contains("fatal: no config"),
        "stderr is kept: {}",
        reason(1)
    );
    assert!(status[1].to_string().starts_with("crash: failed ("));

    // Within the cool-down after a failed round, a call fails fast with the reason.
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "c".into());
    let started = Instant::now();
    let err = manager
        .call_tool("ghost", "anything", serde_json::json!({}), &ctx)
        .await
        .unwrap_err();
    // No restart is attempted (the message says when the next one is due).
    assert!(started.elapsed() < Duration::from_secs(1));
    let text = err.to_string();
    assert!(text.contains("MCP server `ghost` is unavailable"), "{text}");
    assert!(text.contains("next restart attempt in"), "{text}");
}

/// A stdio server (`sh`) that starts a helper in its process group, writes the
/// helper's pid to `<dir>/<name>.helper` and its own to `<dir>/<name>.server`, then
/// runs `then` — never a valid handshake. One start attempt.
fn with_helper(name: &str, dir: &Path, then: &str) -> McpServerConfig {
    let script = format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > '{dir}/{name}.helper'; \
         echo $$ > '{dir}/{name}.server'; {then}",
        dir = dir.display()
    );
    let mut config = McpServerConfig::stdio(name, "sh", ["-c".to_owned(), script]);
    config.restart_attempts = 1;
    config
}

/// The server's and its helper's pids, once both are written.
fn pids(name: &str, dir: &Path) -> Option<[u32; 2]> {
    let read = |what: &str| {
        std::fs::read_to_string(dir.join(format!("{name}.{what}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some([read("server")?, read("helper")?])
}

/// Asserts (polling briefly) that every process in `pids` is gone, killing leftovers
/// so a failure leaves nothing running.
async fn assert_gone(what: &str, pids: [u32; 2]) {
    let mut left = Vec::new();
    for pid in pids {
        if !common::wait_process_gone(pid, Duration::from_secs(2)).await {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            left.push(pid);
        }
    }
    assert!(
        left.is_empty(),
        "{what}: processes left running (server, helper = {pids:?}): {left:?}"
    );
}

#[tokio::test]
async fn a_failed_or_timed_out_handshake_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // Answers garbage then closes stdout, while it and its helper keep running.
    let garbage = with_helper(
        "garbage",
        dir.path(),
        "echo 'not json-rpc'; exec >&-; exec sleep 300",
    );
    let mut mute = with_helper("mute", dir.path(), "exec sleep 300");
    mute.init_timeout_secs = 1;
    let manager = McpManager::start(vec![garbage, mute]).await.unwrap();
    for (i, name) in ["garbage", "mute"].into_iter().enumerate() {
        let status = &manager.status()[i];
        assert!(
            matches!(status.state, ServerState::Failed { .. }),
            "{status}"
        );
        assert!(status.tools.is_empty());
        let pids = pids(name, dir.path()).expect("the server ran");
        assert_gone(name, pids).await;
    }
}

#[tokio::test]
async fn a_start_cancelled_during_the_handshake_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut stuck = with_helper("stuck", dir.path(), "exec sleep 300");
    stuck.init_timeout_secs = 60;
    let written = async {
        loop {
            if let Some(pids) = pids("stuck", dir.path()) {
                return pids;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // The start is dropped (as on Ctrl-C) once the server and its helper run.
    let pids = tokio::select! {
        started = McpManager::start(vec![stuck]) => panic!("the start ended: {started:?}"),
        pids = written => pids,
    };
    assert_gone("stuck", pids).await;
}
