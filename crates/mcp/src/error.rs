//! The one error type of `oxydra-mcp`.

use thiserror::Error;

/// Why configuring, starting or talking to an MCP server failed.
///
/// Tool calls never return this type: [`crate::McpTool`] turns failures into the
/// `oxydra_tools::ToolError` the executor reports to the model.
#[derive(Debug, Error)]
pub enum McpError {
    /// A `[[mcp_servers]]` entry is unusable.
    #[error("MCP server `{server}`: invalid config: {message}")]
    InvalidConfig {
        /// The server's configured name (may be empty when that is the problem).
        server: String,
        /// What is wrong.
        message: String,
    },
    /// Two `[[mcp_servers]]` entries share a name.
    #[error("MCP server name `{server}` is configured more than once")]
    DuplicateServer {
        /// The name.
        server: String,
    },
    /// The server's process could not be started.
    #[error("MCP server `{server}`: could not start `{command}`: {source}")]
    Spawn {
        /// The server.
        server: String,
        /// The command that failed.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The `initialize` handshake did not finish in time.
    #[error(
        "MCP server `{server}` did not complete the initialize handshake within {secs} s{}",
        stderr_suffix(stderr)
    )]
    InitTimeout {
        /// The server.
        server: String,
        /// The limit.
        secs: u64,
        /// The last lines the server wrote to stderr, if any.
        stderr: String,
    },
    /// The `initialize` handshake failed.
    #[error(
        "MCP server `{server}`: initialize failed: {message}{}",
        stderr_suffix(stderr)
    )]
    Handshake {
        /// The server.
        server: String,
        /// The protocol or transport error.
        message: String,
        /// The last lines the server wrote to stderr, if any.
        stderr: String,
    },
    /// A request other than a tool call (e.g. `tools/list`) failed.
    #[error("MCP server `{server}`: {request} failed: {message}")]
    Request {
        /// The server.
        server: String,
        /// The request (`tools/list`, …).
        request: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The server is down and may not be restarted now.
    #[error("MCP server `{server}` is unavailable: {reason}")]
    Unavailable {
        /// The server.
        server: String,
        /// Why (its last failure, and when it will be tried again).
        reason: String,
    },
    /// The caller cancelled while the server was starting.
    #[error("MCP server `{server}`: cancelled while starting")]
    Cancelled {
        /// The server.
        server: String,
    },
    /// Registering a server's tools failed (e.g. a name clash with another tool).
    #[error("MCP server `{server}`: could not register tool `{tool}`: {message}")]
    Register {
        /// The server.
        server: String,
        /// The registry name of the tool.
        tool: String,
        /// The registry's error.
        message: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; server stderr: {stderr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_server_and_carry_stderr() {
        let err = McpError::InitTimeout {
            server: "slow".into(),
            secs: 1,
            stderr: String::new(),
        };
        assert_eq!(
            err.to_string(),
            "MCP server `slow` did not complete the initialize handshake within 1 s"
        );
        let err = McpError::Handshake {
            server: "x".into(),
            message: "connection closed".into(),
            stderr: "boom".into(),
        };
        assert_eq!(
            err.to_string(),
            "MCP server `x`: initialize failed: connection closed; server stderr: boom"
        );
    }
}
