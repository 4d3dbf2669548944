//! Starting the `[[mcp_servers]]` of the configuration and registering their tools
//! beside the built-in ones, for `run`, `chat`, `serve` and `agents list`.

use oxydra::mcp::{McpManager, McpServerConfig, ServerState};
use oxydra::tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

use crate::error::CliError;

/// Starts the servers (all at once, each within its handshake timeout) and registers
/// the tools of those that started as `<server>__<tool>`. A server that did not
/// start is reported on stderr, contributes no tools and is not tried again; the
/// others still work.
/// `None` when no server is configured (nothing is started).
pub async fn start(
    configs: &[McpServerConfig],
    registry: &mut ToolRegistry,
) -> Result<Option<McpManager>, CliError> {
    start_until(configs, registry, &CancellationToken::new()).await
}

/// [`start`], given up when `cancel` is cancelled (Ctrl-C during start-up): the
/// servers are then killed with their whole process groups, whether they had started
/// or were still in their handshake, and the error is [`cancelled_at_start`].
pub async fn start_until(
    configs: &[McpServerConfig],
    registry: &mut ToolRegistry,
    cancel: &CancellationToken,
) -> Result<Option<McpManager>, CliError> {
    if configs.is_empty() {
        return Ok(None);
    }
    let manager = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        started = McpManager::start(configs.to_vec()) => Some(started),
    };
    let Some(manager) = manager else {
        // Dropping the start dropped every server, which killed its process group
        // (the mcp crate's start guard), whether it had connected or not.
        return Err(cancelled_at_start());
    };
    let manager = manager.map_err(|error| CliError::Mcp(error.to_string()))?;
    for status in manager.status() {
        if let ServerState::Failed { reason } = &status.state {
            // The reason names the server itself; said once.
            let prefix = format!("MCP server `{}`: ", status.name);
            let reason = reason.strip_prefix(&prefix).unwrap_or(reason);
            // The reason quotes the server's stderr: scrubbed and sanitized, on any
            // stream.
            let line = format!(
                "warning: MCP server `{}` did not start, its tools are unavailable: {reason}",
                status.name
            );
            let line = oxydra::scrubbing::scrub(&line).text.into_owned();
            eprintln!("{}", crate::terminal_text::lines(&line));
        }
    }
    if let Err(error) = manager.register_tools(registry) {
        manager.shutdown().await;
        return Err(CliError::Mcp(error.to_string()));
    }
    Ok(Some(manager))
}

/// The error of a start-up cancelled with Ctrl-C (exit code 130).
pub fn cancelled_at_start() -> CliError {
    CliError::Run {
        kind: "cancelled".to_owned(),
        message: "cancelled while starting the MCP servers".to_owned(),
    }
}

/// Stops the servers, if any were started.
pub async fn stop(manager: Option<McpManager>) {
    if let Some(manager) = manager {
        manager.shutdown().await;
    }
}
