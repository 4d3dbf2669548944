//! Tools from Model Context Protocol servers.
//!
//! `oxydra-mcp` owns everything between Oxydra and the MCP servers a user
//! configures under `[[mcp_servers]]` ([`McpServerConfig`]): it starts each server
//! (a stdio child process or a streamable-HTTP endpoint) through the official
//! `rmcp` SDK, lists its tools, and registers each one in the
//! [`oxydra_tools::ToolRegistry`] as an [`McpTool`] named `<server>__<tool>` with
//! the server's input schema, so the executor's validation, rules, dedupe and
//! consent apply to it like to any built-in tool. Tiers come from the config and
//! the tools' annotations ([`tool_tier`]). The [`McpManager`] restarts a server that
//! died (on the next call, with backoff), bounds the handshake and every call
//! with timeouts, forwards cancellation to the server, reports each server's
//! state ([`ServerStatus`]) and stops the servers with the runtime.
//!
//! ```
//! use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
//! use oxydra_tools::ToolRegistry;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // `sleep` never speaks MCP: the handshake times out and the server is `failed`.
//! let mut config = McpServerConfig::stdio("mute", "sleep", ["5"]);
//! config.init_timeout_secs = 1;
//! config.restart_attempts = 1;
//! let manager = McpManager::start(vec![config]).await.unwrap();
//! let status = manager.status();
//! assert!(matches!(status[0].state, ServerState::Failed { .. }));
//! assert!(status[0].to_string().contains("initialize handshake within 1 s"));
//!
//! let mut registry = ToolRegistry::new();
//! assert!(manager.register_tools(&mut registry).unwrap().is_empty());
//! manager.shutdown().await;
//! # });
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod auth;
mod config;
mod connect;
mod error;
mod manager;
mod mcp_tool;
mod media;
mod server;
mod status;
mod tier;
mod tool_spec;

pub use config::{
    DEFAULT_CALL_TIMEOUT_SECS, DEFAULT_INIT_TIMEOUT_SECS, DEFAULT_RESTART_ATTEMPTS,
    DEFAULT_RESTART_BACKOFF_MS, McpHeaders, McpServerConfig, McpTransportConfig,
};
pub use error::McpError;
pub use manager::McpManager;
pub use mcp_tool::{McpTool, tool_output};
pub use status::{ServerState, ServerStatus, ToolStatus};
pub use tier::tool_tier;
pub use tool_spec::registry_name;
