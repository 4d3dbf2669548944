//! Oxydra: a Rust runtime for tool-using LLM agents.
//!
//! This facade re-exports the layer crates, one cargo feature per layer, so an
//! application can depend on `oxydra` alone and switch off what it does not use:
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`types`] | `oxydra-types` | always |
//! | `provider` | `oxydra-provider` | `provider` |
//! | `http` | `oxydra-http` (the reqwest client set-up of `ProviderConfig::new`, for a client of your own) | `provider` |
//! | `tools` | `oxydra-tools` | `tools` (`tool-trait`: the trait, typed tools and `#[tool]` without the built-in tools) |
//! | `executor` | `oxydra-executor` (`CommandHooks`: programs as hooks, as `[[hooks]]` tables declare them) | `executor` (`command-hooks`) |
//! | `memory` | `oxydra-memory` | `memory` |
//! | `scrubbing` | `oxydra-scrubbing` | `scrubbing` |
//! | `runtime` | `oxydra-runtime` | `runtime` |
//! | `coordinator` | `oxydra-coordinator` (`client`: the typed HTTP client of a running `oxydra serve`) | `coordinator` (`coordinator-client`, not default) |
//! | `mcp` | `oxydra-mcp` | `mcp` |
//! | `mcp_server` | `oxydra-mcp-server` (the coordinator as an MCP server: stdio, streamable HTTP) | `mcp-server` |
//! | `local` | `oxydra-local` (an embedded GGUF model, llama.cpp built from source; `ModelResolver`: `hf:` model names downloaded once) | `local`, not default (`local-download`) |
//! | `storage` | the table of storage backends: a database opened from a path or URL (in this crate) | `memory` (a backend row per its feature) |
//! | `otel` | export of the spans over OTLP/HTTP with the GenAI semantic conventions (in this crate) | `otel`, not default |
//!
//! The layers above the tools (`executor`, `runtime`, `coordinator`, `mcp`) need the
//! tool layer only (`tool-trait`); the built-in tools are the `tools` feature, on by
//! default. The lean line, `default-features = false, features = ["runtime"]`, builds
//! an agent with tools of its own, SQLite memory and typed output, and none of the
//! built-ins' crates (docs/library-guide.md, "A production agent").
//!
//! The crates its public API exposes are re-exported too ([`async_trait`](macro@async_trait), [`serde`],
//! [`schemars`], [`serde_json`], [`CancellationToken`]), so a typed tool needs no other
//! dependency than `oxydra`:
//!
//! ```
//! use oxydra::schemars::JsonSchema;
//! use oxydra::serde::Deserialize;
//! use oxydra::tools::{ToolContext, ToolError, ToolOutput, TypedTool};
//! use oxydra::types::SafetyTier;
//!
//! /// Arguments of `shout`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "oxydra::serde")]
//! #[schemars(crate = "oxydra::schemars")]
//! struct ShoutArgs {
//!     /// What to shout.
//!     text: String,
//! }
//!
//! struct Shout;
//!
//! #[oxydra::async_trait]
//! impl TypedTool for Shout {
//!     type Args = ShoutArgs;
//!     const NAME: &'static str = "shout";
//!     const TIER: SafetyTier = SafetyTier::ReadOnly;
//!     fn description(&self) -> String {
//!         "Repeats the text in capitals".into()
//!     }
//!     async fn run(&self, args: ShoutArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(args.text.to_uppercase()))
//!     }
//! }
//!
//! let schema = oxydra::tools::Tool::schema(&Shout);
//! assert_eq!(schema.parameters["required"], oxydra::serde_json::json!(["text"]));
//! let _cancel = oxydra::CancellationToken::new();
//! ```
//!
//! Shorter: `#[tool]` writes the `TypedTool` from an `async fn` (its doc comment is
//! the description, its parameters the schema), and the builder takes a provider from
//! the environment:
//!
//! ```no_run
//! use oxydra::{runtime::AgentRuntime, tool};
//!
//! /// Tells the weather in a city.
//! #[tool(read_only)]
//! async fn weather(
//!     /// The city.
//!     city: String,
//! ) -> Result<String, std::fmt::Error> {
//!     Ok(format!("Sunny in {city}"))
//! }
//!
//! # async fn hello() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = AgentRuntime::builder()
//!     .provider_from_env("openai", "gpt-4o-mini") // OPENAI_API_KEY, OPENAI_BASE_URL
//!     .tool(Weather)
//!     .build()?;
//! println!("{}", agent.run("Weather in Paris?").await?.final_text);
//! # Ok(())
//! # }
//! assert_eq!(oxydra::tools::Tool::schema(&Weather).parameters["required"][0], "city");
//! ```
//!
//! Runnable examples live in `crates/oxydra/examples/` (`cargo run --example NAME`):
//! `hello`, `typed_output`, `streaming`, `supervisor`, `permission_broker`,
//! `deferred_approval` (a broker that defers consent to a person; the run ends waiting
//! for approval and a request with the decisions resumes it), `memory_resume`,
//! `provider_alone`, `coordinator_axum` and `mcp_tools`.
//!
//! A complete agent: an OpenAI-compatible provider with retries, the built-in tools
//! confined to a workspace, SQLite memory for sessions and retrieval, and budgets.
//! The session id can be passed to a later run (or another process) to continue.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use oxydra::memory::{SqliteConfig, SqliteMemory};
//! use oxydra::provider::{OPENAI_BASE_URL, OpenAiProvider, ProviderConfig};
//! use oxydra::runtime::{AgentRuntime, CancellationToken, RuntimeLimits};
//! use oxydra::tools::{BuiltinToolsConfig, ToolRegistry};
//! use oxydra::types::{RuntimeEvent, SessionId};
//!
//! async fn agent() -> Result<(), Box<dyn std::error::Error>> {
//!     // Opening applies migrations (file I/O): `open_async` does it off the async
//!     // threads (`SqliteMemory::open` is the blocking call, for code outside tokio).
//!     let memory = Arc::new(SqliteMemory::open_async("oxydra.db", SqliteConfig::default()).await?);
//!     let api_key = std::env::var("OPENAI_API_KEY").ok();
//!     let provider = OpenAiProvider::new(ProviderConfig::new(OPENAI_BASE_URL, api_key));
//!     // Budgets: the defaults, the cost capped (`RuntimeLimits` may gain fields).
//!     let mut limits = RuntimeLimits::default();
//!     limits.max_cost = Some(0.50);
//!     let runtime = AgentRuntime::builder()
//!         // Retried with the default `RetryPolicy` (`.without_retries()` opts out).
//!         .provider(Arc::new(provider))
//!         .model("gpt-4o-mini")
//!         .system_prompt("You are a careful coding assistant.")
//!         .tools(ToolRegistry::with_builtins(&BuiltinToolsConfig::default()))
//!         .workspace_root(".")
//!         .memory(memory.clone())
//!         .retrieval(memory)
//!         .limits(limits)
//!         .build()?;
//!
//!     // Stream the run: text as it arrives, progress lines, then the outcome.
//!     let session = SessionId::generate();
//!     let cancel = CancellationToken::new();
//!     let (mut events, outcome) = runtime
//!         .session(&session)
//!         .prompt("Summarise README.md")
//!         .cancel(&cancel)
//!         .stream();
//!     while let Some(event) = events.recv().await {
//!         match event {
//!             RuntimeEvent::TextDelta { text } => print!("{text}"),
//!             RuntimeEvent::Progress(progress) => eprintln!("{}", progress.message),
//!             _ => {}
//!         }
//!     }
//!     let outcome = outcome.await?;
//!     eprintln!("\n{} turns, ${:.4}", outcome.turns, outcome.cost);
//!
//!     // Continue the same conversation (a request without `.cancel` has a token of
//!     // its own; one without a prompt would resume the stored session).
//!     let next = runtime
//!         .session(&session)
//!         .prompt("Now list its open questions.")
//!         .await?;
//!     println!("{}", next.final_text);
//!     Ok(())
//! }
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use oxydra_types as types;

// Lets code generated by `#[tool]` name `::oxydra` inside this crate too.
extern crate self as oxydra;

/// Turns an `async fn` into a tool (see [`oxydra_macros::tool`]).
#[cfg(feature = "tool-trait")]
pub use oxydra_macros::tool;

#[cfg(feature = "tool-trait")]
#[doc(hidden)]
pub mod __macro_support;

// What the public API of the layers exposes, so that an application depends on
// `oxydra` (and `tokio`) alone: tools are written with `async_trait`, typed tools derive
// `serde::Deserialize` and `schemars::JsonSchema` (with `#[serde(crate =
// "oxydra::serde")]` and `#[schemars(crate = "oxydra::schemars")]`), arguments and
// schemas are `serde_json` values, and every call takes a `CancellationToken`.
pub use async_trait::async_trait;
pub use schemars;
pub use serde;
pub use serde_json;
pub use tokio_util::sync::CancellationToken;

#[cfg(any(feature = "otel", feature = "memory"))]
mod error;
#[cfg(feature = "otel")]
pub mod otel;

#[cfg(feature = "coordinator")]
pub use oxydra_coordinator as coordinator;
#[cfg(feature = "executor")]
pub use oxydra_executor as executor;
/// The hook trait and its decisions (see [`executor::Hook`]): implement it and register
/// it with `runtime::AgentRuntimeBuilder::hook`.
#[cfg(feature = "executor")]
pub use oxydra_executor::{
    AfterToolDecision, BeforeToolDecision, Hook, HookError, ModelRequestDecision, ModelRequestEdit,
    ToolHookCall,
};
#[cfg(feature = "provider")]
pub use oxydra_http as http;
#[cfg(feature = "local")]
pub use oxydra_local as local;
#[cfg(feature = "mcp")]
pub use oxydra_mcp as mcp;
#[cfg(feature = "mcp-server")]
pub use oxydra_mcp_server as mcp_server;
#[cfg(feature = "memory")]
pub use oxydra_memory as memory;
#[cfg(feature = "postgres")]
pub use oxydra_postgres as postgres;
#[cfg(feature = "provider")]
pub use oxydra_provider as provider;
#[cfg(feature = "runtime")]
pub use oxydra_runtime as runtime;
/// Evals: suites of tasks scored by their outcome (`oxydra eval`); the same as
/// [`runtime::eval`].
#[cfg(feature = "runtime")]
pub use oxydra_runtime::eval;
#[cfg(feature = "scrubbing")]
pub use oxydra_scrubbing as scrubbing;
#[cfg(feature = "memory")]
pub mod storage;
#[cfg(feature = "tool-trait")]
pub use oxydra_tools as tools;

/// The library guide (`docs/library-guide.md`), here so that the doc tests compile
/// and run each of its Rust blocks: the guide cannot drift from the API.
#[cfg(all(
    doctest,
    feature = "runtime",
    feature = "tools",
    feature = "command-hooks"
))]
#[doc = include_str!("../../../docs/library-guide.md")]
mod library_guide {}
