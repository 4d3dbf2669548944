//! The real MCP servers `scripts/install-mcp-test-servers.sh` installs from the npm
//! registry, for the tests that talk to them (crates/mcp, the binary's end-to-end tests).

use std::path::{Path, PathBuf};

/// Where the install script puts the servers (`OXYDRA_MCP_SERVERS_DIR` overrides).
pub fn servers_dir() -> PathBuf {
    match std::env::var_os("OXYDRA_MCP_SERVERS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
    }
}

/// The entry script of `@modelcontextprotocol/<package>`, or why it cannot run.
pub fn server_script(package: &str) -> Result<PathBuf, String> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !node {
        return Err("node is not installed".to_owned());
    }
    let script = servers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if script.is_file() {
        Ok(script)
    } else {
        Err(format!(
            "{} is missing: run scripts/install-mcp-test-servers.sh",
            script.display()
        ))
    }
}

/// Like [`server_script`], but a missing server fails the calling test loudly unless
/// `OXYDRA_SKIP_MCP_TESTS=1`, when it says so on stderr and gives `None`: never a
/// silent pass.
#[allow(clippy::panic)]
pub fn require(package: &str) -> Option<PathBuf> {
    match server_script(package) {
        Ok(script) => Some(script),
        Err(problem) if std::env::var("OXYDRA_SKIP_MCP_TESTS").is_ok_and(|v| v == "1") => {
            eprintln!(
                "\n!!!!!!!! MCP TEST NOT RUN ({problem}): skipped because \
                 OXYDRA_SKIP_MCP_TESTS=1 !!!!!!!!\n"
            );
            None
        }
        Err(problem) => {
            panic!("MCP test servers unavailable: {problem} (OXYDRA_SKIP_MCP_TESTS=1 skips)")
        }
    }
}
