//! Cancelling or timing out a call sends `notifications/cancelled` to the server:
//! a small probe server (tests/fixtures/cancel_probe.mjs, on the official TypeScript
//! SDK) logs the cancellations it receives.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, McpServerConfig};
use oxydra_tools::ToolError;
use serde_json::json;

fn probe(log: &Path) -> Option<McpServerConfig> {
    common::server_script("server-everything")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cancel_probe.mjs");
    let mut config =
        McpServerConfig::stdio("probe", "node", [script.to_string_lossy().into_owned()]);
    config.env.insert(
        "MCP_NODE_MODULES".into(),
        oxydra_test_support::mcp_servers::servers_dir()
            .join("node_modules")
            .to_string_lossy()
            .into_owned(),
    );
    config
        .env
        .insert("PROBE_LOG".into(), log.to_string_lossy().into_owned());
    config.init_timeout_secs = 20;
    Some(config)
}

/// Wait (polling, at most 30 s: a restart on a loaded machine takes a while) until the
/// probe's log holds `needle`.
async fn wait_for_log(log: &PathBuf, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) || start.elapsed() > Duration::from_secs(30) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn cancelling_sends_the_cancellation_notification() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let Some(config) = probe(&log) else { return };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let ctx = common::ctx(dir.path());
    let cancel = ctx.cancel.clone();
    let log_ref = &log;
    let (result, elapsed) = futures::join!(
        manager.call_tool("probe", "wait", json!({}), &ctx),
        async move {
            let text = wait_for_log(log_ref, "started").await;
            assert!(text.contains("started"), "the tool never started: {text:?}");
            cancel.cancel();
            Instant::now()
        }
    );
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(
        elapsed.elapsed() < Duration::from_secs(2),
        "Cancelled promptly"
    );
    let text = wait_for_log(&log, "cancelled:").await;
    assert!(
        text.contains("cancelled: cancelled by the caller"),
        "{text:?}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_call_dropped_by_its_caller_is_cancelled_on_the_server() {
    // The executor drops a tool's future when the run is cancelled or its own per-call
    // limit fires: the server must still hear that the call is abandoned.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let Some(config) = probe(&log) else { return };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let ctx = common::ctx(dir.path());
    let call = manager.call_tool("probe", "wait", json!({}), &ctx);
    tokio::select! {
        result = call => panic!("the probe's `wait` never answers: {result:?}"),
        text = wait_for_log(&log, "started") => assert!(text.contains("started"), "{text:?}"),
    }
    // The call's future is dropped here, unanswered, without its token being cancelled.
    let text = wait_for_log(&log, "cancelled:").await;
    assert!(
        text.contains("cancelled: abandoned by the caller"),
        "{text:?}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let Some(mut config) = probe(&log) else {
        return;
    };
    config.call_timeout_secs = 1;
    let manager = McpManager::start(vec![config]).await.unwrap();
    let err = manager
        .call_tool("probe", "wait", json!({}), &common::ctx(dir.path()))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Timeout { secs: 1 }), "{err:?}");
    assert_eq!(err.to_string(), "timed out after 1 s");
    let text = wait_for_log(&log, "cancelled:").await;
    assert!(text.contains("cancelled: timed out"), "{text:?}");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_during_a_call_fails_the_call_then_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let Some(mut config) = probe(&log) else {
        return;
    };
    config.restart_backoff_ms = 20;
    let manager = McpManager::start(vec![config]).await.unwrap();
    let pid = manager.server_pid("probe").unwrap();
    let ctx = common::ctx(dir.path());
    let log_ref = &log;
    let (result, ()) = futures::join!(
        manager.call_tool("probe", "wait", json!({}), &ctx),
        async move {
            wait_for_log(log_ref, "started").await;
            let killed = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
        }
    );
    let err = result.unwrap_err();
    assert!(
        err.to_string()
            .contains("MCP server `probe` went away during the call to `wait`"),
        "{err}"
    );
    // The next call restarts it: the new process logs `started` again.
    std::fs::remove_file(&log).unwrap();
    let ctx = common::ctx(dir.path());
    let cancel = ctx.cancel.clone();
    let (result, ()) = futures::join!(
        manager.call_tool("probe", "wait", json!({}), &ctx),
        async move {
            let text = wait_for_log(log_ref, "started").await;
            assert!(text.contains("started"), "{text:?}");
            cancel.cancel();
        }
    );
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert_ne!(manager.server_pid("probe"), Some(pid));
    manager.shutdown().await;
}
