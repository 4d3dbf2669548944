//! `oxydra mcp list | serve`.

use clap::{Args, Subcommand, ValueEnum};

use super::list::ListOptions;
use super::serve::ServeArgs;

/// `oxydra mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: McpAction,
}

/// `oxydra mcp list`.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Starts each configured server, shows its state and its tools, and stops it.
    List(ListOptions),
    /// Serves the coordinator to MCP clients: list blueprints, start, watch and cancel runs.
    Serve(McpServeArgs),
}

/// `oxydra mcp serve`.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// The MCP transport: JSON-RPC lines on stdin/stdout.
    #[arg(long, value_enum, default_value_t = McpTransport::Stdio)]
    pub transport: McpTransport,
    /// The coordinator's settings, as for `oxydra serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How `oxydra mcp serve` talks to its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpTransport {
    /// Newline-delimited JSON-RPC on stdin and stdout (the client starts the server).
    Stdio,
}
