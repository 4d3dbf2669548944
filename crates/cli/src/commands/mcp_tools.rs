//! Starting the `[[mcp_servers]]` of the configuration and registering their tools
//! beside the built-in ones, for `run`, `chat`, `serve` and `agents list`.

use oxydra::mcp::{McpManager, McpServerConfig, ServerState};
use oxydra::tools::ToolRegistry;

use crate::error::CliError;

/// Starts the servers (all at once, each within its handshake timeout) and registers
/// the tools of those that started as `<server>__<tool>`. A server that did not
/// start is reported on stderr and contributes no tools; the others still work.
/// `None` when no server is configured (nothing is started).
pub async fn start(
    configs: &[McpServerConfig],
    registry: &mut ToolRegistry,
) -> Result<Option<McpManager>, CliError> {
    if configs.is_empty() {
        return Ok(None);
    }
    let manager = McpManager::start(configs.to_vec())
        .await
        .map_err(|error| CliError::Mcp(error.to_string()))?;
    for status in manager.status() {
        if let ServerState::Failed { reason } = &status.state {
            eprintln!(
                "warning: MCP server `{}` did not start, its tools are unavailable: {reason}",
                status.name
            );
        }
    }
    if let Err(error) = manager.register_tools(registry) {
        manager.shutdown().await;
        return Err(CliError::Mcp(error.to_string()));
    }
    Ok(Some(manager))
}

/// Stops the servers, if any were started.
pub async fn stop(manager: Option<McpManager>) {
    if let Some(manager) = manager {
        manager.shutdown().await;
    }
}
