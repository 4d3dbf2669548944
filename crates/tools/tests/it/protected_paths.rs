//! The file tools refuse Oxydra's own files: a model writing `oxydra.toml` (in any
//! case, directly or through a symlink), or reading the session database or the trust
//! store that lie in its workspace.

use std::path::Path;

use oxydra_tools::{
    BuiltinToolsConfig, ProtectedKind, ProtectedPaths, ToolContext, ToolError, builtin_tool,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A workspace holding a database (`state/oxydra.db` and its WAL), a trust store and a
/// configuration file named otherwise, and the tools configured to protect them.
struct Setup {
    dir: tempfile::TempDir,
    config: BuiltinToolsConfig,
    ctx: ToolContext,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("state")).unwrap();
    std::fs::write(root.join("state/oxydra.db"), "session secret one").unwrap();
    std::fs::write(root.join("state/oxydra.db-wal"), "session secret two").unwrap();
    std::fs::write(root.join("trust.toml"), "session secret three").unwrap();
    std::fs::write(root.join("agent.toml"), "[runtime]\nmax_turns = 3\n").unwrap();
    std::fs::write(root.join("notes.md"), "a note, not a secret\n").unwrap();
    let config = BuiltinToolsConfig {
        protected: ProtectedPaths::default()
            .with(ProtectedKind::Database, root.join("state/oxydra.db"))
            .with(ProtectedKind::TrustStore, root.join("trust.toml"))
            .with(ProtectedKind::Config, root.join("agent.toml")),
        ..BuiltinToolsConfig::default()
    };
    let ctx = ToolContext::new(root, CancellationToken::new(), "call-protected".into());
    Setup { dir, config, ctx }
}

async fn call(setup: &Setup, tool: &str, args: Value) -> Result<String, ToolError> {
    builtin_tool(tool, &setup.config)
        .unwrap()
        .execute(args, &setup.ctx)
        .await
        .map(|output| output.content)
}

fn assert_refused(result: Result<String, ToolError>, what: &str) {
    match result {
        Err(error @ ToolError::Protected { .. }) => {
            let message = error.to_string();
            assert!(message.starts_with("refused: `"), "{message}");
            assert!(message.contains(what), "{message}");
        }
        other => panic!("expected a refusal naming {what}, got {other:?}"),
    }
}

const PLANTED: &str = "[runtime]\napprove = \"always\"\n";

#[tokio::test]
async fn writing_or_editing_any_oxydra_toml_is_refused() {
    let s = setup();
    let root = s.dir.path();
    for path in [
        "oxydra.toml",
        "OXYDRA.TOML",
        "sub/dir/Oxydra.toml",
        "./oxydra.toml",
    ] {
        let result = call(&s, "file_write", json!({"path": path, "content": PLANTED})).await;
        assert_refused(result, "is Oxydra's own configuration");
    }
    assert!(!root.join("oxydra.toml").exists());
    assert!(!root.join("sub").exists(), "nothing was created");

    // An existing one may be read, not edited.
    std::fs::write(root.join("oxydra.toml"), "[runtime]\napprove = \"ask\"\n").unwrap();
    let result = call(
        &s,
        "file_edit",
        json!({"path": "oxydra.toml", "old": "ask", "new": "always"}),
    )
    .await;
    assert_refused(result, "oxydra.toml");
    let read = call(&s, "file_read", json!({"path": "oxydra.toml"}))
        .await
        .unwrap();
    assert!(read.contains("approve = \"ask\""), "{read}");
    assert_eq!(
        std::fs::read_to_string(root.join("oxydra.toml")).unwrap(),
        "[runtime]\napprove = \"ask\"\n"
    );

    // The configuration in use, whatever its name.
    let result = call(
        &s,
        "file_write",
        json!({"path": "agent.toml", "content": PLANTED}),
    )
    .await;
    assert_refused(result, "agent.toml");
}

#[tokio::test]
async fn a_symlink_to_a_protected_file_is_refused() {
    let s = setup();
    let root = s.dir.path();
    std::fs::write(root.join("oxydra.toml"), "").unwrap();
    std::os::unix::fs::symlink(root.join("oxydra.toml"), root.join("innocent.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("state/oxydra.db"), root.join("data.txt")).unwrap();
    let result = call(
        &s,
        "file_write",
        json!({"path": "innocent.txt", "content": PLANTED}),
    )
    .await;
    assert_refused(result, "configuration");
    assert_eq!(
        std::fs::read_to_string(root.join("oxydra.toml")).unwrap(),
        ""
    );
    assert_refused(
        call(&s, "file_read", json!({"path": "data.txt"})).await,
        "session database",
    );
}

#[tokio::test]
async fn the_database_and_trust_store_cannot_be_read_or_searched() {
    let s = setup();
    for (path, what) in [
        ("state/oxydra.db", "session database"),
        ("state/oxydra.db-wal", "session database"),
        ("state/OXYDRA.db-shm", "session database"),
        ("trust.toml", "trusted configuration files"),
    ] {
        assert_refused(call(&s, "file_read", json!({"path": path})).await, what);
        assert_refused(
            call(&s, "file_write", json!({"path": path, "content": "x"})).await,
            what,
        );
        assert_refused(
            call(&s, "file_search", json!({"pattern": "x", "path": path})).await,
            what,
        );
    }
    let found = call(&s, "file_search", json!({"pattern": "secret"}))
        .await
        .unwrap();
    assert!(found.contains("notes.md:1:"), "{found}");
    assert!(!found.contains("session secret"), "{found}");
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("state/oxydra.db")).unwrap(),
        "session secret one"
    );
}

#[test]
fn protected_paths_are_never_read_from_a_config_file() {
    let config: BuiltinToolsConfig = serde_json::from_value(json!({})).unwrap();
    assert_eq!(config.protected, ProtectedPaths::default());
    assert!(serde_json::from_value::<BuiltinToolsConfig>(json!({"protected": []})).is_err());
    let shown = serde_json::to_value(&config).unwrap();
    assert!(shown.get("protected").is_none(), "{shown}");
    assert!(
        config
            .protected
            .check_write(Path::new("/x"), "oxydra.toml", Path::new("/x/oxydra.toml"))
            .is_err()
    );
}
