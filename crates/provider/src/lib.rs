//! LLM providers for Oxydra.
//!
//! `oxydra-provider` owns the [`Provider`] trait — `complete` and `stream` a
//! [`ProviderRequest`], report [`ProviderCapabilities`] — and the errors a provider
//! call can end in ([`ProviderError`]). It also owns:
//!
//! - [`StreamAccumulator`], which assembles stream items into a [`ProviderResponse`];
//! - [`ReliableProvider`], the one retry and fallback policy: it retries transient
//!   failures under a [`RetryPolicy`], falls back from `stream` to `complete` when a
//!   stream breaks before any output, and stops streaming to an endpoint that answers
//!   streamed requests with an empty or undecodable body;
//! - [`PricingTable`] and [`cost`], the price of a call in US dollars;
//! - `ScriptedProvider` (feature `testing`), a provider that replays a script.
//!
//! The real clients are [`OpenAiProvider`] (any OpenAI-compatible server: OpenAI,
//! OpenRouter, Ollama, vLLM, llama.cpp), [`OpenAiResponsesProvider`] (OpenAI's
//! Responses API, LM Studio's copy of it), [`AnthropicProvider`], [`GeminiProvider`]
//! and [`OllamaProvider`] (Ollama's native API); they parse their streams with this
//! crate's own SSE parser ([`sse`]) or, for Ollama, its NDJSON reader ([`ndjson`]).
//! They write their request bodies with [`json_body`] (serde_json's bytes, faster).
//! A message's parts (images, PDF documents) go to each API in its own documented shape;
//! a part a provider cannot send, or past its documented limit, is a
//! [`ProviderError::UnsupportedPart`] or [`ProviderError::PartLimit`] before anything is
//! sent, never a part silently left out (docs/provider.md has the table).
//! What each kind is (its name, variables, defaults and constructor) is one row of
//! [`PROVIDERS`], which [`from_env`] and the `oxydra` CLI read. Which kind an
//! environment selects (a kind named, a base URL of one's own, else the first key
//! set) is decided once, by [`select`], for both.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use oxydra_provider::{
//!     OpenAiProvider, Provider, ProviderConfig, ProviderRequest, ReliableProvider,
//!     RetryPolicy, ToolChoice, cost,
//! };
//! use oxydra_types::{Message, Usage};
//!
//! // A local Ollama server: no API key, so no auth header is sent.
//! let ollama = OpenAiProvider::new(
//!     ProviderConfig::new("http://localhost:11434/v1", None).with_limits(32_768, 4_096),
//! );
//! let provider = ReliableProvider::new(
//!     Arc::new(ollama),
//!     RetryPolicy::default().with_base_delay(Duration::from_millis(200)),
//! );
//! assert_eq!(provider.capabilities("llama3.2").context_window, 32_768);
//!
//! let request = ProviderRequest::new("gpt-4o-mini", vec![Message::user("Hello")]);
//! assert_eq!(request.tool_choice, ToolChoice::Auto);
//! // 1000 input and 100 output tokens of gpt-4o-mini: $0.00015 + $0.00006.
//! let dollars = cost(&request.model, &Usage::new(1_000, 100, 0));
//! assert!((dollars - 0.00021).abs() < 1e-12);
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod accumulator;
mod anthropic;
mod call_span;
mod config;
mod error;
mod fallback;
mod from_env;
mod gemini;
mod http_error;
pub mod json_body;
mod kinds;
pub mod ndjson;
mod ollama;
mod openai;
mod parts;
mod pricing;
mod provider;
mod reasoning_settings;
mod reliable;
mod request;
mod response_cap;
mod responses;
mod retry_notice;
mod retry_policy;
mod sampling_overrides;
#[cfg(feature = "testing")]
mod scripted;
pub mod sse;
mod text_tool_calls;
mod transport;

pub use accumulator::{StreamAccumulator, response_to_stream_items};
pub use anthropic::{
    ANTHROPIC_BASE_URL, ANTHROPIC_MIN_THINKING_BUDGET, ANTHROPIC_VERSION, AnthropicProvider,
    AnthropicStreamDecoder, DEFAULT_MAX_TOKENS,
};
pub use config::{
    DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_LOCAL_MAX_TOKENS, DEFAULT_MAX_RESPONSE_BYTES,
    ProviderConfig,
};
pub use error::ProviderError;
pub use from_env::{ProviderChoice, Selection, from_env, from_env_with, select};
pub use gemini::{GEMINI_BASE_URL, GeminiProvider, GeminiStreamDecoder};
pub use kinds::{PROVIDER_KINDS, PROVIDERS, ProviderInfo, provider_info};
pub use ollama::{OLLAMA_BASE_URL, OllamaProvider, OllamaStreamDecoder};
pub use openai::{OPENAI_BASE_URL, OpenAiProvider, OpenAiStreamDecoder};
pub use parts::{MAX_PARTS_PER_REQUEST, refuse_all_parts};
pub use pricing::{ModelPrice, PricingTable, cost};
pub use provider::{Provider, ProviderCapabilities, ProviderStream};
pub use reasoning_settings::ReasoningEffort;
pub use reliable::ReliableProvider;
pub use request::{ProviderRequest, ProviderResponse, ToolChoice};
pub use responses::{OpenAiResponsesProvider, OpenAiResponsesStreamDecoder};
pub use retry_notice::{RetryObserver, observing_retries};
pub use retry_policy::{RetryPolicy, is_retryable, parse_retry_after};
pub use sampling_overrides::SamplingOverrides;
#[cfg(feature = "testing")]
pub use scripted::{ScriptedProvider, ScriptedTurn};
