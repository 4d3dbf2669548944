//! The error type of `oxydra-mcp-server`: [`McpServerError`].

use thiserror::Error;

/// What can go wrong while building or serving the coordinator over MCP.
#[derive(Debug, Error)]
pub enum McpServerError {
    /// A tool to serve cannot be listed over MCP (its input schema is not a JSON
    /// object or does not compile, or it has no MCP annotations).
    #[error("tool `{name}`: input schema: {message}")]
    InvalidTool {
        /// The tool.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The built-in tools to serve beside the coordinator's are refused (an unknown
    /// name, one named twice).
    #[error("{0}")]
    BuiltinTools(#[from] oxydra_tools::ToolError),
    /// The coordinator shut down before the server could serve it.
    #[error("the coordinator has shut down")]
    CoordinatorGone,
    /// The MCP session could not start (the client's `initialize` never came, or the
    /// stream closed first).
    #[error("MCP session did not start: {0}")]
    SessionStart(String),
    /// The MCP session ended with an error.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// The HTTP listener failed.
    #[error("{0}")]
    Http(#[from] oxydra_coordinator::CoordinatorError),
}
