//! An agent-style batch: an MCP tool and the built-in `file_read`, taken from one
//! registry and run at the same time. (A full runtime run with `ScriptedProvider`
//! belongs in the runtime / workspace e2e tests, which sit above this crate.)

use crate::common;

use oxydra_mcp::McpManager;
use oxydra_tools::{BuiltinToolsConfig, SafetyTier, ToolRegistry};
use serde_json::json;

#[tokio::test]
async fn an_mcp_tool_and_file_read_run_concurrently_from_one_registry() {
    let Some(config) = common::everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.md"), "step one\nstep two\n").unwrap();
    let manager = McpManager::start(vec![config]).await.unwrap();
    let mut registry =
        ToolRegistry::with_builtin_subset(&BuiltinToolsConfig::default(), &["file_read"]).unwrap();
    manager.register_tools(&mut registry).unwrap();

    // Both are ReadOnly, so the executor puts them in one concurrent group.
    assert_eq!(registry.tier("file_read"), Some(SafetyTier::ReadOnly));
    assert_eq!(
        registry.tier("everything__echo"),
        Some(SafetyTier::ReadOnly)
    );
    let names: Vec<String> = registry.schemas().into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"file_read".to_owned()) && names.contains(&"everything__echo".to_owned())
    );

    let echo = registry.get("everything__echo").unwrap();
    let read = registry.get("file_read").unwrap();
    let ctx_a = common::ctx(dir.path());
    let ctx_b = common::ctx(dir.path());
    let (echoed, file) = futures::join!(
        echo.execute(json!({"message": "in parallel"}), &ctx_a),
        read.execute(json!({"path": "plan.md"}), &ctx_b),
    );
    assert_eq!(echoed.unwrap().content, "Echo: in parallel");
    let file = file.unwrap().content;
    assert!(
        file.contains("step one") && file.contains("step two"),
        "{file}"
    );
    manager.shutdown().await;
}
