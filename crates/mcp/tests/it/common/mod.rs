//! The MCP test servers that scripts/install-mcp-test-servers.sh installs, as configs.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
use oxydra_tools::ToolContext;
use tokio_util::sync::CancellationToken;

/// The entry script of an MCP test server package
/// (`None` only when `OXYDRA_SKIP_MCP_TESTS=1`; otherwise a missing server fails loudly).
pub use oxydra_test_support::mcp_servers::require as server_script;

/// `server-everything` over stdio, named `everything`.
pub fn everything() -> Option<McpServerConfig> {
    let script = server_script("server-everything")?;
    let mut config = McpServerConfig::stdio(
        "everything",
        "node",
        [script.to_string_lossy().into_owned(), "stdio".to_owned()],
    );
    config.init_timeout_secs = 20;
    config.call_timeout_secs = 20;
    Some(config)
}

/// `server-filesystem` rooted at `root`, named `fs`.
pub fn filesystem(root: &Path) -> Option<McpServerConfig> {
    let script = server_script("server-filesystem")?;
    let mut config = McpServerConfig::stdio(
        "fs",
        "node",
        [
            script.to_string_lossy().into_owned(),
            root.to_string_lossy().into_owned(),
        ],
    );
    config.init_timeout_secs = 20;
    Some(config)
}

/// A context for one call in `root`.
pub fn ctx(root: &Path) -> ToolContext {
    ToolContext::new(root, CancellationToken::new(), "call-test".into())
}

/// Wait (polling, at most `limit`) until `server` is no longer `running`.
pub async fn wait_not_running(manager: &McpManager, server: &str, limit: Duration) -> ServerState {
    let start = Instant::now();
    loop {
        let state = manager
            .status()
            .into_iter()
            .find(|s| s.name == server)
            .map(|s| s.state)
            .unwrap_or(ServerState::Stopped);
        if state != ServerState::Running || start.elapsed() > limit {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether process `pid` exists (and is not a zombie we reaped).
pub fn process_alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
    match stat {
        Ok(text) => !text
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Wait (polling, at most `limit`) until process `pid` is gone.
pub async fn wait_process_gone(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while process_alive(pid) {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}
