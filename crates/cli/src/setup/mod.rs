//! Building what the subcommands run from the resolved configuration
//! ([`crate::config::Effective`]): the provider, the database, the MCP servers' tools,
//! the hook commands, the agent of `run` / `chat` and the coordinator of `serve` / `agents list` /
//! `mcp serve`. Builders only read the resolved configuration; none decides anything
//! the configuration already decided.

pub mod agent;
pub mod database;
pub mod hooks;
pub mod instructions;
pub mod launch;
pub mod mcp;
pub mod provider;
pub mod service;
pub mod session_id;
pub mod tool_choice;
