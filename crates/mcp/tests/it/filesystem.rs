//! Against the real `@modelcontextprotocol/server-filesystem`, rooted in a tempdir.

use crate::common;

use oxydra_mcp::{McpManager, ServerState};
use oxydra_tools::{SafetyTier, ToolError, ToolRegistry};
use serde_json::json;

#[tokio::test]
async fn reads_lists_and_refuses_paths_outside_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
    let Some(mut config) = common::filesystem(&root) else {
        return;
    };
    config.allow_tools = Some(vec![
        "read_text_file".into(),
        "list_directory".into(),
        "write_file".into(),
    ]);
    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status}");
    let mut registry = ToolRegistry::new();
    let mut names = manager.register_tools(&mut registry).unwrap();
    names.sort();
    assert_eq!(
        names,
        ["fs__list_directory", "fs__read_text_file", "fs__write_file"]
    );
    assert_eq!(
        registry.tier("fs__read_text_file"),
        Some(SafetyTier::ReadOnly)
    );
    assert_eq!(
        registry.tier("fs__write_file"),
        Some(SafetyTier::Privileged),
        "destructiveHint"
    );

    let ctx = common::ctx(&root);
    let path = root.join("notes.txt").to_string_lossy().into_owned();
    let read = registry.get("fs__read_text_file").unwrap();
    let out = read.execute(json!({ "path": path }), &ctx).await.unwrap();
    assert!(
        out.content.contains("first line\nsecond line"),
        "{}",
        out.content
    );

    let list = registry.get("fs__list_directory").unwrap();
    let out = list
        .execute(json!({ "path": root.to_string_lossy() }), &ctx)
        .await
        .unwrap();
    assert!(out.content.contains("[FILE] notes.txt"), "{}", out.content);

    let err = read
        .execute(json!({ "path": "/etc/passwd" }), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `fs` tool `read_text_file` failed: "),
        "{text}"
    );
    assert!(text.contains("Access denied"), "{text}");
    manager.shutdown().await;
}
