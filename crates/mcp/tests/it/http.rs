//! The streamable-HTTP transport, against server-everything in `streamableHttp` mode
//! on 127.0.0.1.

use crate::common;

use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
use oxydra_tools::ToolRegistry;
use serde_json::json;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn tools_work_over_streamable_http() {
    let Some(script) = common::server_script("server-everything") else {
        return;
    };
    let port = free_port();
    let mut node = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "server never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let config = McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"));
    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status}");
    assert!(status.transport.starts_with("http: http://127.0.0.1:"));
    assert_eq!(manager.server_pid("web"), None);
    let mut registry = ToolRegistry::new();
    manager.register_tools(&mut registry).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = registry
        .get("web__echo")
        .unwrap()
        .execute(json!({"message": "over http"}), &common::ctx(dir.path()))
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: over http");
    manager.shutdown().await;
    node.kill().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_http_server_fails_clearly_and_fast() {
    let mut config = McpServerConfig::http("down", format!("http://127.0.0.1:{}/mcp", free_port()));
    config.restart_attempts = 1;
    let started = Instant::now();
    let manager = McpManager::start(vec![config]).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    match &manager.status()[0].state {
        ServerState::Failed { reason } => {
            assert!(
                reason.contains("MCP server `down`: initialize failed"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}
