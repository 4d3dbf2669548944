#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Servers that never start: no node needed.

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
