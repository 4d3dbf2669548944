//! `McpManager`: every configured server, started and stopped with the runtime.

use std::collections::HashSet;
use std::sync::Arc;

use nix::sys::signal::Signal;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};

use crate::config::McpServerConfig;
use crate::connect::kill_group;
use crate::error::McpError;
use crate::mcp_tool::{McpTool, run_call};
use crate::server::McpServer;
use crate::status::{ServerState, ServerStatus};

/// The MCP servers of one runtime.
///
/// [`McpManager::start`] starts every server at once (a server that fails to start
/// is reported by [`McpManager::status`], not as an error, and is not started again:
/// its tools are discovered only by a successful start, so it contributes none);
/// [`McpManager::register_tools`] adds their tools to a [`ToolRegistry`];
/// [`McpManager::shutdown`] stops them. Dropping the manager kills any server
/// still running, even while tools registered from it are still held.
#[derive(Debug)]
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
}

impl McpManager {
    /// Check every config, then start all servers concurrently, each bounded by
    /// its `init_timeout_secs` (and restart attempts). Only invalid or duplicate
    /// configs are errors. A server that still fails is left `failed` without tools
    /// and is not retried; a stdio server's whole process group is killed when its
    /// start fails or this future is dropped.
    pub async fn start(configs: Vec<McpServerConfig>) -> Result<Self, McpError> {
        let mut names = HashSet::new();
        for config in &configs {
            config.transport()?;
            if !names.insert(config.name.clone()) {
                return Err(McpError::DuplicateServer {
                    server: config.name.clone(),
                });
            }
        }
        let servers: Vec<Arc<McpServer>> = configs
            .into_iter()
            .map(|config| Arc::new(McpServer::new(config)))
            .collect();
        let starts = servers.iter().map(|server| async move {
            if let Err(err) = server.start().await {
                // The state's reason rather than the error, whose "next try in …" is
                // about calls: agents never call a server without tools.
                let reason = match server.status().state {
                    ServerState::Failed { reason } => reason,
                    _ => err.to_string(),
                };
                // The caller reports it (its status says why); once, not per attempt.
                tracing::debug!(
                    server = %server.name(),
                    "MCP server did not start and is not retried; it contributes no tools: {reason}"
                );
            }
        });
        futures::future::join_all(starts).await;
        Ok(Self { servers })
    }

    /// The tools of every server that started, in config order then server order.
    pub fn tools(&self) -> Vec<McpTool> {
        self.servers
            .iter()
            .flat_map(|server| {
                server
                    .tool_specs()
                    .into_iter()
                    .map(|spec| McpTool::new(Arc::clone(server), spec))
            })
            .collect()
    }

    /// Register every tool of [`McpManager::tools`] in `registry`, returning their
    /// names. Nothing is registered when any name is already taken.
    pub fn register_tools(&self, registry: &mut ToolRegistry) -> Result<Vec<String>, McpError> {
        let tools = self.tools();
        for tool in &tools {
            let name = tool.schema().name;
            if registry.contains(&name) {
                return Err(McpError::Register {
                    server: tool.server_name().to_owned(),
                    tool: name,
                    message: "a tool with this name is already registered".to_owned(),
                });
            }
        }
        let mut names = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.schema().name;
            let server = tool.server_name().to_owned();
            let tool: Arc<dyn Tool> = Arc::new(tool);
            registry
                .register_arc(tool)
                .map_err(|err| McpError::Register {
                    server,
                    tool: name.clone(),
                    message: err.to_string(),
                })?;
            names.push(name);
        }
        Ok(names)
    }

    /// Call the tool `tool` (its MCP name) of the server `server` directly, outside
    /// the registry — e.g. for a tool the allow list hides, or from a CLI command.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(found) = self.servers.iter().find(|s| s.name() == server) else {
            return Err(ToolError::Failed(format!(
                "no MCP server named `{server}` is configured"
            )));
        };
        run_call(found, tool, args, ctx).await
    }

    /// Each server, its state and its tools (for `oxydra mcp list`).
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|server| server.status()).collect()
    }

    /// The pid of the stdio server `name` while it runs.
    pub fn server_pid(&self, name: &str) -> Option<u32> {
        self.servers
            .iter()
            .find(|server| server.name() == name)
            .and_then(|server| server.pid())
    }

    /// A function that kills every server's whole process group at once (SIGKILL),
    /// for a process about to exit without running destructors (a second Ctrl-C):
    /// the servers run in process groups of their own, so nothing else would stop
    /// what they started. It is synchronous and safe to call at any time.
    pub fn killer(&self) -> impl Fn() + Send + Sync + 'static {
        let servers = self.servers.clone();
        move || {
            for server in &servers {
                if let Some(group) = server.process_group() {
                    kill_group(group, Signal::SIGKILL);
                }
            }
        }
    }

    /// Stop every server: stdin is closed so it can exit; one still running 0.5 s
    /// later gets SIGTERM, and SIGKILL 0.5 s after that (its whole process group).
    /// Later calls to its tools fail with a clear error.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|server| server.shutdown())).await;
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        for server in &self.servers {
            server.kill_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_and_duplicate_configs_are_refused() {
        let err = McpManager::start(vec![McpServerConfig::http("x", "ftp://h")])
            .await
            .unwrap_err();
        assert!(matches!(err, McpError::InvalidConfig { .. }), "{err}");
        let twice = McpServerConfig::stdio("a", "true", Vec::<String>::new());
        let err = McpManager::start(vec![twice.clone(), twice])
            .await
            .unwrap_err();
        assert!(matches!(err, McpError::DuplicateServer { ref server } if server == "a"));
        let manager = McpManager::start(Vec::new()).await.unwrap();
        assert!(manager.status().is_empty());
        assert!(manager.tools().is_empty());
    }
}
