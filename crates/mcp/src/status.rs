//! What `oxydra mcp list` shows: each server, its state and its tools.

use std::fmt;

use oxydra_types::SafetyTier;
use serde::{Deserialize, Serialize};

/// The state of one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// Connected and answering.
    Running,
    /// Not running: it failed to start or died. A server that died is started again
    /// on the next call (within its restart budget); one that failed its first start
    /// has no registered tools, so agents never call it and it stays down (only a
    /// direct `McpManager::call_tool` tries it again).
    Failed {
        /// The last failure.
        reason: String,
    },
    /// Shut down with the runtime.
    Stopped,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Running => f.write_str("running"),
            Self::Failed { reason } => write!(f, "failed ({reason})"),
            Self::Stopped => f.write_str("stopped"),
        }
    }
}

/// One tool a server exposes to the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStatus {
    /// The name in the `ToolRegistry` (`<server>__<tool>`).
    pub name: String,
    /// The tool's name on the server.
    pub mcp_name: String,
    /// Its safety tier.
    pub tier: SafetyTier,
    /// Its description.
    pub description: String,
}

/// One server, as `oxydra mcp list` shows it.
///
/// ```
/// use oxydra_mcp::{ServerState, ServerStatus, ToolStatus};
/// use oxydra_types::SafetyTier;
///
/// let status = ServerStatus {
///     name: "everything".into(),
///     transport: "stdio: node index.js stdio".into(),
///     state: ServerState::Running,
///     tools: vec![ToolStatus {
///         name: "everything__echo".into(),
///         mcp_name: "echo".into(),
///         tier: SafetyTier::ReadOnly,
///         description: "Echoes back the input string".into(),
///     }],
/// };
/// let text = status.to_string();
/// assert!(text.starts_with("everything: running (stdio: node index.js stdio)"));
/// assert!(text.contains("everything__echo  read_only  Echoes back the input string"));
/// let json = serde_json::to_value(&status).unwrap();
/// assert_eq!(json["state"]["state"], "running");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// The configured name.
    pub name: String,
    /// How it is reached (`stdio: <command line>` or `http: <url>`).
    pub transport: String,
    /// Running, failed (with the reason) or stopped.
    pub state: ServerState,
    /// The tools registered for it (empty when it never started).
    pub tools: Vec<ToolStatus>,
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} ({})", self.name, self.state, self.transport)?;
        if self.tools.is_empty() {
            return writeln!(f, "  (no tools)");
        }
        for tool in &self.tools {
            let description = tool.description.lines().next().unwrap_or_default();
            writeln!(
                f,
                "  {}  {}  {}",
                tool.name,
                tool.tier.as_str(),
                description
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_state_shows_its_reason() {
        let status = ServerStatus {
            name: "fs".into(),
            transport: "stdio: x".into(),
            state: ServerState::Failed {
                reason: "exited".into(),
            },
            tools: Vec::new(),
        };
        assert_eq!(
            status.to_string(),
            "fs: failed (exited) (stdio: x)\n  (no tools)\n"
        );
        let json = serde_json::to_value(&status.state).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"state": "failed", "reason": "exited"})
        );
        let back: ServerState = serde_json::from_value(json).unwrap();
        assert_eq!(back, status.state);
        assert_eq!(ServerState::Stopped.to_string(), "stopped");
    }
}
