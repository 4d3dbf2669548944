//! An embedded local model for Oxydra: GGUF models run in-process by llama.cpp
//! (through the `llama-cpp-2` bindings), behind the same
//! [`Provider`](oxydra_provider::Provider) trait as the HTTP clients.
//!
//! - The prompt is the model's own chat template (`tokenizer.chat_template`),
//!   rendered with `minijinja`; ChatML when the model has none.
//! - Tool calls are constrained by a grammar made from each tool's JSON Schema,
//!   switched on when the model opens a call, so the arguments always parse.
//! - Each model is loaded once per process and runs on its own thread; decoding
//!   stops within one token of a cancellation.
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

mod config;
mod engine;
mod error;
mod grammar;
mod model;
pub mod openmp_spin;
mod output;
mod provider;
mod template;
mod tool_format;
mod tool_prompt;

pub use config::{DEFAULT_MAX_CONTEXT, LocalConfig};
pub use error::LocalError;
pub use grammar::{ToolGrammar, tool_grammar};
pub use provider::{LocalProvider, SMALL_MODEL_PARAMETERS};
pub use template::{ChatTemplate, FALLBACK_TEMPLATE};
pub use tool_format::{ParsedCall, ToolFormat};
