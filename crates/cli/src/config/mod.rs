//! Configuration: the TOML file (docs/configuration.md), where it is found, and how it is
//! merged with the environment and the flags into the [`Effective`] configuration.
//!
//! One direction, low to high: the file's types (here) and its parsing (`file`),
//! layering (`powers` decides each key, `layers` applies it, `load` finds and reads the
//! files), then the decisions: the database (`database`), the provider
//! (`provider_pick`) and everything else (`merge`, which calls the two). Nothing
//! below `merge` reaches up to it, and nothing here reaches into `setup` or `commands`.

mod agents;
mod database;
mod file;
mod launched;
mod layers;
mod load;
mod mask;
mod merge;
mod powers;
mod pricing;
mod print;
mod protected;
mod provider_pick;
mod rule_entry;
mod sampling;
pub mod sandbox;
pub mod trust;

use std::path::PathBuf;

use oxydra::mcp::McpServerConfig;
use oxydra::tools::BuiltinToolsConfig;
use serde::{Deserialize, Serialize};

pub use crate::args::{ApproveMode, Effort, OpenAiApi, ProviderKind};
pub use agents::AgentConfig;
pub use database::{Database, default_db_path};
pub use file::{parse, user_config_path};
pub use launched::{launched_hashes, lookup_dirs};
pub use layers::strip_powers;
pub use load::load;
pub use mask::masked_mcp_server;
pub use merge::{
    Effective, EffectiveRuntime, Merged, ServiceConfig, current_provider, merge, merge_for_print,
    merge_service, resolve_database,
};
pub use pricing::Prices;
#[cfg(feature = "local")]
pub use provider_pick::models_dir;
pub use provider_pick::{EffectiveProvider, public_provider};
pub use rule_entry::{RuleEntry, rules};
pub use sampling::SamplingSection;

/// Reads an environment variable (a function so tests need not touch the real environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The whole file. Every table rejects keys it does not know.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `[provider]`.
    #[serde(default)]
    pub provider: ProviderSection,
    /// `[runtime]`.
    #[serde(default)]
    pub runtime: RuntimeSection,
    /// `[memory]`.
    #[serde(default)]
    pub memory: MemorySection,
    /// `[tools]`: settings of the built-in tools (`output_limit_bytes`, `[tools.web_fetch]`
    /// `allow_hosts` …, `[tools.shell]`, `[tools.file_search]`).
    #[serde(default)]
    pub tools: BuiltinToolsConfig,
    /// `[[rules]]`: tool rules, each parsed once into the executor's rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleEntry>,
    /// `[[agents]]`: blueprints for the coordinator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentConfig>,
    /// `[serve]`: the coordinator HTTP API of `oxydra serve`.
    #[serde(default)]
    pub serve: ServeSection,
    /// `[[mcp_servers]]`: Model Context Protocol servers whose tools agents may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// `[pricing."MODEL"]`: prices of models the built-in table does not know.
    #[serde(default, skip_serializing_if = "Prices::is_empty")]
    pub pricing: Prices,
    /// `[sandbox]`: the command sandbox (`mode`, `network`).
    #[serde(default)]
    pub sandbox: sandbox::SandboxSection,
    /// `[[hooks]]`: commands run before model requests, around tool calls or on events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<oxydra::executor::CommandHookConfig>,
}

/// `[serve]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeSection {
    /// Address to listen on (default `127.0.0.1:8080`).
    pub addr: Option<String>,
    /// Most runs executing at once (default 4).
    pub max_concurrent_runs: Option<usize>,
    /// Largest accepted request body in bytes (default 1 MiB).
    pub body_limit_bytes: Option<usize>,
    /// Environment variable holding the bearer token every request must carry;
    /// absent: `OXYDRA_SERVE_TOKEN` if set, else no auth.
    pub auth_token_env: Option<String>,
    /// Serve a non-loopback address without a token (as `--insecure-no-auth`).
    pub allow_unauthenticated: Option<bool>,
    /// Host names accepted in the `Host` header besides the loopback ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Origins accepted in the `Origin` header besides the server's own loopback ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// With a PostgreSQL database: how long a worker's claim on a run lasts unless
    /// renewed, in milliseconds (default 15000); a run whose worker died is taken over
    /// by another once it lapses.
    pub run_lease_ttl_ms: Option<u64>,
    /// With `approve = "ask"`: how long a run waits for a person's decision on a
    /// consent request, in seconds (default 86400, a day); past it the request is a
    /// denial.
    pub approval_ttl_secs: Option<u64>,
    // Bounds of the HTTP server and of run trees (docs/coordinator.md, "Bounds");
    // absent keys keep the coordinator's defaults.
    /// Most connections served at once (default 256).
    pub max_connections: Option<usize>,
    /// Time to send a request's headers once begun, in ms (default 10000).
    pub header_read_timeout_ms: Option<u64>,
    /// Time to send a request's body once its headers came, in ms (default 30000).
    pub body_read_timeout_ms: Option<u64>,
    /// Time a connection may stay open with nothing in flight, in ms (default 60000).
    pub idle_timeout_ms: Option<u64>,
    /// Deepest a run tree may grow (default 3).
    pub max_run_depth: Option<u32>,
    /// Most runs a run tree may start, its root not counted (default 32).
    pub max_runs_per_root: Option<u32>,
}

/// `[provider]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// `openai`, `anthropic`, `gemini`, `ollama` or `local`.
    pub kind: Option<ProviderKind>,
    /// Base URL of the API.
    pub base_url: Option<String>,
    /// Model name; for `local`, a GGUF file or `hf:OWNER/REPO/FILE.gguf`.
    pub model: Option<String>,
    /// CPU threads of the local model (default: all cores).
    pub threads: Option<u32>,
    /// Environment variable holding the API key; absent with a `base_url`: no auth header.
    pub api_key_env: Option<String>,
    /// The most text and tool-call arguments one response may hold, in bytes
    /// (default 8 MiB); a response past it fails the call.
    pub max_response_bytes: Option<usize>,
    /// Longest wait, in seconds, for a streamed response to begin (default 60); a
    /// server that takes the request and never answers fails the run after it.
    pub first_byte_timeout_secs: Option<u64>,
    /// `chat` (default) or `responses`: which OpenAI API to speak (kind `openai` only).
    pub api: Option<OpenAiApi>,
    /// `minimal`, `low`, `medium` or `high`: how hard an OpenAI reasoning model thinks
    /// (kind `openai` only; absent: the model's default).
    pub reasoning_effort: Option<Effort>,
    /// Most tokens the model may spend thinking (Anthropic: at least 1024; Gemini);
    /// absent: thinking off (Anthropic) or the model's default (Gemini).
    pub thinking_budget: Option<u32>,
    /// `[provider.sampling]` of the local model.
    pub sampling: Option<SamplingSection>,
}

/// How long a run of `oxydra serve` waits for a decision on a consent request when
/// `[serve] approval_ttl_secs` does not say: a day.
pub const DEFAULT_APPROVAL_TTL_SECS: u64 = 24 * 3600;

/// `[runtime]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSection {
    /// Most turns per task.
    pub max_turns: Option<usize>,
    /// Most cost per task in US dollars.
    pub max_cost: Option<f64>,
    /// Most seconds per turn.
    pub turn_timeout_secs: Option<u64>,
    /// Share of the context window that triggers the rolling summary.
    pub summary_trigger_ratio: Option<f64>,
    /// Context window override in tokens.
    pub context_window: Option<u32>,
    /// Most output tokens per provider call.
    pub max_output_tokens: Option<u32>,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// How consent is answered (`ask`, `always`, `never`).
    pub approve: Option<ApproveMode>,
    /// Most seconds a run waits for a session another run is writing.
    pub session_wait_secs: Option<f64>,
    /// The tool choice of every turn (`auto`, `none`, `required` or a tool's name).
    pub tool_choice: Option<String>,
}

/// `[memory]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// SQLite file, relative to the config file.
    pub db: Option<PathBuf>,
    /// Inject retrieved snippets from memory before each provider call.
    pub retrieval: Option<bool>,
    /// The largest one stored message may be, in bytes (its JSON, images and documents
    /// included, base64-encoded); default 32 MiB. An append of a larger message fails
    /// and stores nothing.
    pub max_message_bytes: Option<usize>,
}
