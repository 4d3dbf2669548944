//! Oxydra's coordinator as an MCP server.
//!
//! `oxydra-mcp-server` owns serving a [`Coordinator`](oxydra_coordinator::Coordinator)
//! to MCP clients (Claude Code, codex, Cursor, another agent): its tools
//! `list_agent_blueprints`, `start_agent_run` (a refused run returns the API's 400
//! body, schema included, as the tool's error, so the client corrects itself),
//! `get_agent_run` (`wait_secs`), `cancel_agent_run` and, where runs wait for a
//! person, `list_pending_approvals` / `decide_approval`, each listed with MCP
//! annotations (which only read, which change things). Calls run the coordinator's own
//! tool objects, so a run started over MCP is validated, stored and run exactly like
//! one from `POST /runs`. Other tools (the built-in `file_read`, …) may be served
//! beside them through [`BuiltinTools`], confined and consented as an agent's calls.
//!
//! Transports: a byte stream ([`McpServer::serve_io`], [`McpServer::serve_stdio`]) and
//! streamable HTTP ([`McpServer::serve_http`]) behind the guards of `oxydra serve`
//! (bearer token, `Host`, `Origin`, body, connection and time bounds). The server is
//! also an `rmcp` `ServerHandler` for any other rmcp transport.
//!
//! It is a crate of its own above the coordinator: `oxydra-mcp` sits below the
//! coordinator (it gives the coordinator's agents the tools of MCP servers), so a
//! server of the coordinator cannot live there without a dependency cycle.
//!
//! ```no_run
//! use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps};
//! use oxydra_mcp_server::{MCP_PATH, McpServer};
//! use oxydra_tools::ToolRegistry;
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let blueprints = vec![BlueprintConfig::agent("researcher", "Research assistant", "You research.")];
//! let deps = RunnerDeps::new(ToolRegistry::new(), ".");
//! let coordinator = Coordinator::new(CoordinatorConfig::default(), blueprints, deps).await?;
//! let server = McpServer::builder(&coordinator).workspace(".").build()?;
//!
//! // On stdin/stdout, until the client closes stdin or Ctrl-C / SIGTERM …
//! server.clone().serve_stdio(oxydra_coordinator::shutdown_signal()).await?;
//!
//! // … or streamable HTTP at http://127.0.0.1:8080/mcp, guarded as `oxydra serve` is.
//! assert_eq!(MCP_PATH, "/mcp");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! server.serve_http(listener, oxydra_coordinator::shutdown_signal()).await?;
//! coordinator.shutdown().await;
//! # Ok(())
//! # }
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod annotations;
mod builtin_tools;
mod error;
mod handler;
mod http;
mod io;

pub use builtin_tools::BuiltinTools;
pub use error::McpServerError;
pub use handler::{ENVELOPE_BYTES, McpServer, McpServerBuilder};
pub use http::MCP_PATH;
