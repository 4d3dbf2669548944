//! Locating the MCP test servers that scripts/install-mcp-test-servers.sh installs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
use oxydra_tools::ToolContext;
use tokio_util::sync::CancellationToken;

/// Where the install script puts the servers.
pub fn servers_dir() -> PathBuf {
    match std::env::var_os("OXYDRA_MCP_SERVERS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
    }
}

fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// The entry script of `@modelcontextprotocol/<package>`, or `None` when the test
/// must be skipped. Missing node or servers fail the test loudly unless
/// `OXYDRA_SKIP_MCP_TESTS=1` is set — never a silent pass.
pub fn server_script(package: &str) -> Option<PathBuf> {
    let script = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let problem = if !node_available() {
        Some("node is not installed".to_owned())
    } else if !script.is_file() {
        Some(format!("{} is missing", script.display()))
    } else {
        None
    };
    let Some(problem) = problem else {
        return Some(script);
    };
    let skip = std::env::var("OXYDRA_SKIP_MCP_TESTS").is_ok_and(|v| v == "1");
    eprintln!(
        "\n!!!!!!!! MCP TEST NOT RUN: {problem}. Run scripts/install-mcp-test-servers.sh \
         (needs node + npm). {} !!!!!!!!\n",
        if skip {
            "Skipping because OXYDRA_SKIP_MCP_TESTS=1"
        } else {
            "Set OXYDRA_SKIP_MCP_TESTS=1 to skip"
        }
    );
    assert!(skip, "MCP test servers unavailable: {problem}");
    None
}

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
