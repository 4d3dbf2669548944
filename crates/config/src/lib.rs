//! The `oxydra.toml` configuration file (docs/configuration.md): its types, its parsing
//! with errors that name the file, the key and the line, and how the user's own file and
//! a project's `./oxydra.toml` are layered, a project file the user has not trusted
//! (`oxydra trust`) only narrowing what the user's allows.
//!
//! This crate owns the file format, finding and reading the files and the trust store;
//! it reads no flag and no environment variable. The `oxydra` CLI merges what it returns
//! with its flags and the environment; a program embedding Oxydra can read the same
//! files the same way.
//!
//! ```
//! use std::path::Path;
//!
//! let text = "[runtime]\nmax_turns = 4\n[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 2\n";
//! let config = oxydra_config::parse(Path::new("oxydra.toml"), text).unwrap();
//! assert_eq!(config.runtime.limits.max_turns, 4);
//! assert_eq!(config.rules.len(), 1);
//!
//! let error = oxydra_config::parse(Path::new("oxydra.toml"), "[runtime]\nmax_turn = 4\n").unwrap_err();
//! assert!(error.to_string().contains("unknown key `max_turn` in [runtime]"));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agents;
mod error;
mod fallback;
mod ignored;
mod launched;
mod layers;
mod load;
mod parse;
mod powers;
mod pricing;
pub mod provenance;
mod runtime;
pub mod sandbox;
mod secrets;
mod shell_word;
pub mod trust;
mod values;

use std::path::PathBuf;

use oxydra::coordinator::{BlueprintConfig, CoordinatorConfig};
use oxydra::executor::ToolRule;
use oxydra::mcp::McpServerConfig;
use oxydra::tools::BuiltinToolsConfig;
use serde::{Deserialize, Serialize};

pub use error::ConfigError;
pub use fallback::FallbackSection;
pub use ignored::{Ignored, IgnoredReason, listed as listed_ignored};
pub use launched::{Launched, launched, launched_hashes, lookup_dirs};
pub use layers::strip_powers;
pub use load::{LoadedFile, load_layers, load_with, project_file};
pub use parse::{http_url, parse, user_config_path};
pub use powers::is_local_model;
pub use pricing::{Prices, table as pricing_table, unknown_price_message};
pub use runtime::RuntimeSection;
pub use secrets::{SecretConfig, Secrets, check_secret};
pub use shell_word::shell_quoted;
pub use values::{ApproveMode, Effort, OpenAiApi, ProviderKind};

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
    /// `[[rules]]`: the executor's tool rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ToolRule>,
    /// `[[agents]]`: the coordinator's blueprints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<BlueprintConfig>,
    /// `[serve]`: the coordinator and its HTTP API (`oxydra serve`), read as the
    /// coordinator's own settings.
    #[serde(default)]
    pub serve: CoordinatorConfig,
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
    /// `[secrets.NAME]`: secrets the model names as `{{secret:NAME}}` and never holds.
    #[serde(default, skip_serializing_if = "secrets::Secrets::is_empty")]
    pub secrets: secrets::Secrets,
    /// `[checkpoints]`: whether turns record checkpoints of the workspace (for undo and
    /// rewind), how much content one keeps and how many are kept.
    #[serde(default)]
    pub checkpoints: oxydra::tools::checkpoint::CheckpointConfig,
    /// `[provenance]`: which sources, once read, make side-effecting and privileged
    /// calls wait for a person (an untrusted file may only add to it).
    #[serde(default)]
    pub provenance: provenance::ProvenanceSection,
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
    /// `[provider.sampling]` of the local model: the provider crate's own
    /// `SamplingOverrides` (each key left out: the GGUF's recommendation, else
    /// llama.cpp server's default).
    pub sampling: Option<oxydra::provider::SamplingOverrides>,
    /// `[[provider.fallback]]`: the models that take a turn this one failed after its
    /// retries, in order (withheld from a project file that is not trusted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<FallbackSection>,
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
