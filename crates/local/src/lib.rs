//! An embedded local model for Oxydra: GGUF models run in-process by llama.cpp
//! (through the `llama-cpp-2` bindings), behind the same
//! [`Provider`](oxydra_provider::Provider) trait as the HTTP clients.
//!
//! - The prompt is the model's own chat template (`tokenizer.chat_template`),
//!   rendered with `minijinja`; ChatML when the model has none.
//! - Tool calls are constrained by a grammar made from each tool's JSON Schema,
//!   switched on when the model opens a call, so the arguments always parse.
//! - Each model is loaded once per process and runs on its own thread; decoding
//!   stops within one token (or one prompt chunk, [`DEFAULT_PROMPT_CHUNK`] tokens)
//!   of a cancellation. Before the process exits, call
//!   [`stop_all`]: it stops and joins those threads, so that no exit runs the C++
//!   static destructors while llama.cpp still computes.
//! - The chat template renders under a fuel limit and an output cap, on a
//!   blocking thread, and a cancelled turn does not wait for it.
//! - Sampling ([`Sampling`]) comes from the configuration, else the GGUF's
//!   `general.sampling.*` recommendation, else llama.cpp server's defaults, with a
//!   repetition penalty, a cap on output tokens, and a repetition guard that cuts
//!   an answer stuck in a loop.
//! - With the `download` feature, `ModelResolver` takes the model names the `oxydra`
//!   CLI takes: a GGUF path, or `hf:OWNER/REPO/FILE.gguf` downloaded once (resumed,
//!   its size and SHA-256 checked, renamed into place when whole) through the HTTP
//!   client of `oxydra-http`, reporting to a `DownloadProgress` of yours.
//! - On Linux, llama.cpp's threads spin briefly at their barriers and then sleep
//!   ([`openmp_spin`]), so decoding holds up when another process takes a core.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use oxydra_local::{LocalConfig, LocalProvider};
//! let provider = LocalProvider::load_async(LocalConfig::new("model.gguf")).await?;
//! println!("context: {} tokens", provider.context_window());
//! # Ok(()) }
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod choices;
mod config;
#[cfg(feature = "download")]
mod download;
mod engine;
mod error;
mod gbnf_text;
mod grammar;
mod hard_exit;
mod integer_range;
mod model;
mod model_info;
pub mod openmp_spin;
mod output;
mod provider;
mod repetition_guard;
mod sampling;
mod schema_grammar;
mod small_schema;
mod template;
mod tool_format;
mod tool_prompt;
mod workspace_paths;

pub use choices::{ArgumentChoice, ArgumentChoices};
pub use config::{DEFAULT_MAX_CONTEXT, DEFAULT_PROMPT_CHUNK, LocalConfig};
#[cfg(feature = "download")]
pub use download::{
    DEFAULT_HF_ENDPOINT, DownloadProgress, HF_ENDPOINT_VAR, HfName, ModelResolver, NoProgress,
    download,
};
pub use error::LocalError;
pub use grammar::{ToolGrammar, answer_grammar, one_call_grammar, tool_grammar};
pub use hard_exit::exit_skipping_destructors;
pub use model::stop_all;
pub use provider::{
    LocalProvider, MALFORMED_CALL_RETRIES, REPETITION_NOTE, SMALL_MODEL_PARAMETERS,
};
pub use repetition_guard::RepetitionGuard;
pub use sampling::{
    DEFAULT_MAX_TOKENS, DEFAULT_MIN_P, DEFAULT_REPEAT_LAST_N, DEFAULT_REPEAT_PENALTY,
    DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P, LocalSampling, SMALL_MODEL_TEMPERATURE,
    SMALL_MODEL_TOP_P, Sampling, SamplingOverrides,
};
pub use template::{ChatTemplate, FALLBACK_TEMPLATE, OUTPUT_ALLOWANCE, TEMPLATE_FUEL};
pub use tool_format::{ParsedCall, ToolFormat};
pub use workspace_paths::{MAX_DEPTH, MAX_DIRS, MAX_FILES, WorkspacePaths, listing, named_paths};
