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
    /// The MCP transport: JSON-RPC lines on stdin/stdout, or streamable HTTP at `/mcp`
    /// on `--addr` (with the guards of `oxydra serve`).
    #[arg(long, value_enum, default_value_t = McpTransport::Stdio)]
    pub transport: McpTransport,
    /// Serve streamable HTTP on this address: `--transport http --addr ADDR`.
    #[arg(long, value_name = "ADDR", conflicts_with = "addr")]
    pub listen: Option<String>,
    /// Built-in tools to serve next to the coordinator's (`file_read,file_list`),
    /// confined to the workspace as in `oxydra run`.
    #[arg(long, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// Serve `decide_approval` too, so the MCP client may approve or deny the tool
    /// calls runs wait on. Off by default: the client is usually a model, and a model
    /// must not approve its own runs; a person decides with `oxydra approvals` or the
    /// web console of `oxydra serve`.
    #[arg(long)]
    pub allow_model_approvals: bool,
    /// The coordinator's settings, as for `oxydra serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How `oxydra mcp serve` talks to its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpTransport {
    /// Newline-delimited JSON-RPC on stdin and stdout (the client starts the server).
    Stdio,
    /// MCP's streamable HTTP at `http://ADDR/mcp` (clients connect to a running server).
    Http,
}
