//! Against the real `@modelcontextprotocol/server-everything` over stdio.

use crate::common;

use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, ServerState};
use oxydra_tools::{SafetyTier, ToolError, ToolRegistry};
use serde_json::json;

#[tokio::test]
async fn lists_and_registers_tools_with_schemas_and_tiers() {
    let Some(mut config) = common::everything() else {
        return;
    };
    config.deny_tools = vec!["trigger-sampling-request".into()];
    config
        .tool_tiers
        .insert("get-sum".into(), SafetyTier::SideEffecting);
    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = manager.status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].state, ServerState::Running, "{}", status[0]);
    let tool = |name: &str| status[0].tools.iter().find(|t| t.name == name).cloned();
    let echo = tool("everything__echo").expect("echo listed");
    assert_eq!(echo.mcp_name, "echo");
    assert_eq!(echo.tier, SafetyTier::ReadOnly, "readOnlyHint");
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(
        tool("everything__get-sum").unwrap().tier,
        SafetyTier::SideEffecting,
        "override"
    );
    assert!(
        tool("everything__trigger-sampling-request").is_none(),
        "denied"
    );
    assert!(
        status[0]
            .to_string()
            .contains("everything__echo  read_only")
    );

    let mut registry = ToolRegistry::new();
    let names = manager.register_tools(&mut registry).unwrap();
    assert_eq!(names.len(), status[0].tools.len());
    let schema = registry.get("everything__echo").unwrap().schema();
    assert_eq!(schema.parameters["type"], "object");
    assert_eq!(schema.parameters["properties"]["message"]["type"], "string");
    assert_eq!(
        registry.tier("everything__echo"),
        Some(SafetyTier::ReadOnly)
    );
    let err = manager.register_tools(&mut registry).unwrap_err();
    assert!(err.to_string().contains("already registered"), "{err}");
    manager.shutdown().await;
    assert_eq!(manager.status()[0].state, ServerState::Stopped);
}

#[tokio::test]
async fn echo_and_sum_return_the_servers_text() {
    let Some(config) = common::everything() else {
        return;
    };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let mut registry = ToolRegistry::new();
    manager.register_tools(&mut registry).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path());

    let echo = registry.get("everything__echo").unwrap();
    let out = echo
        .execute(json!({"message": "hello mcp"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: hello mcp");
    assert_eq!(out.structured, None);

    let sum = registry.get("everything__get-sum").unwrap();
    let out = sum.execute(json!({"a": 2, "b": 40}), &ctx).await.unwrap();
    assert_eq!(out.content, "The sum of 2 and 40 is 42.");

    let weather = registry.get("everything__get-structured-content").unwrap();
    let out = weather
        .execute(json!({"location": "Chicago"}), &ctx)
        .await
        .unwrap();
    let structured = out.structured.expect("structured content kept");
    assert!(structured["temperature"].is_number(), "{structured}");
    assert!(out.content.contains("temperature"), "{}", out.content);
    manager.shutdown().await;
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_clear_tool_errors() {
    let Some(config) = common::everything() else {
        return;
    };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path());

    let err = manager
        .call_tool("everything", "get-sum", json!({"a": "two", "b": 1}), &ctx)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    assert!(
        text.contains("MCP server `everything`") && text.contains("get-sum"),
        "{text}"
    );

    let err = manager
        .call_tool("everything", "no-such-tool", json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no-such-tool"), "{err}");

    let err = manager
        .call_tool("everything", "echo", json!([1, 2]), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");

    let err = manager
        .call_tool("nope", "echo", json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("no MCP server named `nope`"),
        "{err}"
    );

    // The server is still fine after all that.
    let out = manager
        .call_tool("everything", "echo", json!({"message": "still here"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: still here");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_killed_server_is_restarted_on_the_next_call() {
    let Some(mut config) = common::everything() else {
        return;
    };
    config.restart_backoff_ms = 50;
    let manager = McpManager::start(vec![config]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path());
    let call = || manager.call_tool("everything", "echo", json!({"message": "m"}), &ctx);
    assert_eq!(call().await.unwrap().content, "Echo: m");

    let pid = manager
        .server_pid("everything")
        .expect("stdio server has a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let state = common::wait_not_running(&manager, "everything", Duration::from_secs(2)).await;
    match &state {
        ServerState::Failed { reason } => {
            assert!(reason.contains("restarted on the next call"), "{reason}")
        }
        other => panic!("expected failed, got {other:?}"),
    }

    assert_eq!(call().await.unwrap().content, "Echo: m", "restarted");
    let new_pid = manager.server_pid("everything").unwrap();
    assert_ne!(new_pid, pid);
    assert_eq!(manager.status()[0].state, ServerState::Running);
    assert!(!common::process_alive(pid));
    manager.shutdown().await;
    assert!(common::wait_process_gone(new_pid, Duration::from_secs(2)).await);
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_keeps_working() {
    let Some(mut config) = common::everything() else {
        return;
    };
    config.call_timeout_secs = 1;
    let manager = McpManager::start(vec![config]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path());
    let started = Instant::now();
    let err = manager
        .call_tool(
            "everything",
            "trigger-long-running-operation",
            json!({"duration": 10, "steps": 10}),
            &ctx,
        )
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, ToolError::Timeout { secs: 1 }), "{err:?}");
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_millis(1900),
        "{elapsed:?}"
    );
    let out = manager
        .call_tool("everything", "echo", json!({"message": "after"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: after");
    manager.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_call_returns_cancelled_promptly() {
    let Some(config) = common::everything() else {
        return;
    };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let mut registry = ToolRegistry::new();
    manager.register_tools(&mut registry).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path());
    let slow = registry
        .get("everything__trigger-long-running-operation")
        .unwrap();
    let cancel = ctx.cancel.clone();
    let started = Instant::now();
    let (result, ()) = futures::join!(
        slow.execute(json!({"duration": 10, "steps": 10}), &ctx),
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        }
    );
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // A new call (fresh token) still works on the same server.
    let ctx = common::ctx(dir.path());
    let out = registry
        .get("everything__echo")
        .unwrap()
        .execute(json!({"message": "x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: x");
    manager.shutdown().await;
}

#[tokio::test]
async fn dropping_the_manager_kills_the_server() {
    let Some(config) = common::everything() else {
        return;
    };
    let manager = McpManager::start(vec![config]).await.unwrap();
    let mut registry = ToolRegistry::new();
    manager.register_tools(&mut registry).unwrap();
    let pid = manager.server_pid("everything").unwrap();
    assert!(common::process_alive(pid));
    drop(manager);
    assert!(common::wait_process_gone(pid, Duration::from_secs(1)).await);
    // Tools still held by the registry fail clearly instead of hanging.
    let dir = tempfile::tempdir().unwrap();
    let err = registry
        .get("everything__echo")
        .unwrap()
        .execute(json!({"message": "x"}), &common::ctx(dir.path()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("has been shut down"), "{err}");
}

#[tokio::test]
async fn shutdown_stops_what_the_server_started_even_after_it_exits_on_eof() {
    // A launcher (like npx) may leave processes that never read stdin: the server
    // exits when its stdin closes, they would not. Shutdown kills the whole group.
    let Some(mut config) = common::everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("helper.pid");
    let script = config.args[0].clone();
    config.command = Some("sh".to_owned());
    config.args = vec![
        "-c".to_owned(),
        format!(
            "sleep 300 & echo $! > {}; exec node {script} stdio",
            pid_file.display()
        ),
    ];
    let manager = McpManager::start(vec![config]).await.unwrap();
    let helper: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(common::process_alive(helper));
    manager.shutdown().await;
    let gone = common::wait_process_gone(helper, Duration::from_secs(2)).await;
    if !gone {
        let _ = std::process::Command::new("kill")
            .args(["-9", &helper.to_string()])
            .status();
    }
    assert!(gone, "a process the server started outlived shutdown");
}
