//! Oxydra as an MCP server (`oxydra mcp serve`): the coordinator's tools for MCP
//! clients such as Claude Code, codex or Cursor.
//!
//! It lives in the CLI, not in `oxydra-mcp`: that crate sits below the coordinator
//! (it gives the coordinator's agents their MCP tools), so a server of the
//! coordinator cannot be built there without a dependency cycle.

mod annotations;
mod approval_tools;
pub mod builtin_tools;
mod cancel_tool;
mod handler;
pub mod http;

pub use handler::McpServer;
