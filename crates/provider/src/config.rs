//! Settings shared by the HTTP clients.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue};

use crate::json_body;
use crate::provider::ProviderCapabilities;
use crate::reasoning_settings::ReasoningEffort;

/// How to reach a provider: where, with which key, over which HTTP client.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The API root, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`
    /// (OpenAI-compatible), `https://api.anthropic.com` (Anthropic),
    /// `https://generativelanguage.googleapis.com` (Gemini) or `http://localhost:11434`
    /// (Ollama's native API). A trailing `/` is ignored.
    pub base_url: String,
    /// The API key; `None` sends no auth header (local servers).
    pub api_key: Option<String>,
    /// The environment variable the key was read from or, when no key is sent, the one
    /// that would carry it (e.g. `OPENAI_API_KEY`). Only named in messages: a refused
    /// key (HTTP 401/403) says whether a key was sent and from which variable.
    pub api_key_source: Option<String>,
    /// The HTTP client (share one across providers to share its connection pool).
    pub client: reqwest::Client,
    /// Longest wait for a whole `complete` response, and for a stream's headers.
    pub request_timeout: Duration,
    /// Longest silence between two chunks of a stream.
    pub stream_idle_timeout: Duration,
    /// Longest wait for the response to a streamed request to begin (its status and
    /// headers), default [`DEFAULT_FIRST_BYTE_TIMEOUT`]. A server that accepts the
    /// connection and never answers fails with
    /// [`ProviderError::FirstByteTimeout`](crate::ProviderError::FirstByteTimeout),
    /// naming its URL, after this long; the smaller of it and
    /// [`request_timeout`](Self::request_timeout) applies. A whole (`complete`) request
    /// is not bounded by it: such a server sends nothing until its answer is written.
    pub first_byte_timeout: Duration,
    /// Overrides the context window reported by `capabilities` (needed for local
    /// models, whose window the client cannot know).
    pub context_window: Option<u32>,
    /// Overrides the largest output reported by `capabilities`.
    pub max_output_tokens: Option<u32>,
    /// Extra headers sent with every request (e.g. OpenRouter's `HTTP-Referer`).
    pub extra_headers: Vec<(String, String)>,
    /// The most one response may hold: its text and tool-call arguments, in bytes
    /// (default [`DEFAULT_MAX_RESPONSE_BYTES`]). Past it the call fails with
    /// [`ProviderError::ResponseTooLarge`](crate::ProviderError::ResponseTooLarge) and
    /// reading stops. One server-sent event, and a non-streamed body, may take
    /// [`ProviderConfig::max_wire_bytes`] (room for JSON escaping).
    pub max_response_bytes: usize,
    /// How hard an OpenAI reasoning model thinks (`reasoning_effort` in chat
    /// completions, `reasoning.effort` in the Responses API); `None` sends nothing and
    /// leaves the model's default.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The most tokens Anthropic or Gemini may spend thinking (extended thinking /
    /// `thinkingBudget`); `None` leaves thinking off (Anthropic) or at the model's
    /// default (Gemini).
    pub thinking_budget: Option<u32>,
}

/// The most tokens one answer of a local model may have, unless the request or the
/// configuration says otherwise: enough for a long answer or a file written by a
/// tool call, and a bound on a model that never stops. Here rather than in
/// `oxydra-local` so that what reads a configuration knows it without building the
/// model.
pub const DEFAULT_LOCAL_MAX_TOKENS: u32 = 2048;

/// The default of [`ProviderConfig::max_response_bytes`]: 8 MiB, far above what a
/// model writes in one answer (128k output tokens are about 512 KiB of text).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// The default of [`ProviderConfig::first_byte_timeout`]: 60 s, well under the
/// runtime's default 120 s turn timeout, so a hung server is reported as what it is.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);

impl ProviderConfig {
    /// A config for `base_url` with `api_key`, a default client
    /// ([`oxydra_http::client`]: rustls on `ring` with Mozilla's roots, no process-wide
    /// crypto provider needed) and default timeouts (10 minutes per request, 2 minutes
    /// of stream silence).
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key,
            api_key_source: None,
            client: oxydra_http::client(),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(120),
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            context_window: None,
            max_output_tokens: None,
            extra_headers: Vec::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            reasoning_effort: None,
            thinking_budget: None,
        }
    }

    /// The same config with another [`max_response_bytes`](Self::max_response_bytes)
    /// (at least 1).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes.max(1);
        self
    }

    /// The most bytes one server-sent event or a whole non-streamed body may take:
    /// twice [`max_response_bytes`](Self::max_response_bytes) (JSON escaping can
    /// double a text) plus 64 KiB for the envelope.
    pub fn max_wire_bytes(&self) -> usize {
        self.max_response_bytes
            .saturating_mul(2)
            .saturating_add(64 * 1024)
    }

    /// The same config naming `var` as where the API key comes from (see
    /// [`api_key_source`](Self::api_key_source)).
    pub fn with_api_key_source(mut self, var: impl Into<String>) -> Self {
        self.api_key_source = Some(var.into());
        self
    }

    /// The same config using `client`.
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// The same config with other timeouts.
    pub fn with_timeouts(mut self, request: Duration, stream_idle: Duration) -> Self {
        self.request_timeout = request;
        self.stream_idle_timeout = stream_idle;
        self
    }

    /// The same config with another [`first_byte_timeout`](Self::first_byte_timeout)
    /// (at least 1 ms).
    pub fn with_first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.first_byte_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The same config reporting this context window and output limit.
    pub fn with_limits(mut self, context_window: u32, max_output_tokens: u32) -> Self {
        self.context_window = Some(context_window);
        self.max_output_tokens = Some(max_output_tokens);
        self
    }

    /// The same config asking an OpenAI reasoning model for `effort`.
    pub fn with_reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.reasoning_effort = Some(effort);
        self
    }

    /// The same config letting Anthropic or Gemini think for up to `tokens`.
    pub fn with_thinking_budget(mut self, tokens: u32) -> Self {
        self.thinking_budget = Some(tokens);
        self
    }

    /// The same config with one more header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// `base_url` without trailing slashes.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// A JSON `POST` of `body` to `url` with the API key (sent as `key`) and the extra
    /// headers: every HTTP client's request starts here. The body is written by
    /// [`json_body::to_vec`] (serde_json's bytes, faster), with the
    /// `Content-Type: application/json` reqwest's `json` would set.
    pub(crate) fn post_json(
        &self,
        url: String,
        body: &impl serde::Serialize,
        key: KeyHeader,
    ) -> reqwest::RequestBuilder {
        let builder = self.client.post(url);
        let mut builder = match json_body::to_vec(body) {
            Some(bytes) => builder
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(bytes),
            // What cannot be written as JSON fails as before: reqwest keeps
            // serde_json's error and reports it when the request is sent.
            None => builder.json(body),
        };
        if let Some(api_key) = &self.api_key {
            builder = match key {
                KeyHeader::Bearer => builder.bearer_auth(api_key),
                KeyHeader::Named(name) => builder.header(name, api_key.as_str()),
            };
        }
        for (name, value) in &self.extra_headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
    }

    /// The capabilities of a streaming, tool-calling API (with parallel calls) whose
    /// model has `limits` (context window, largest output), unless this config
    /// overrides them.
    pub(crate) fn capabilities(&self, limits: (u32, u32)) -> ProviderCapabilities {
        let (window, output) = limits;
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            context_window: self.context_window.unwrap_or(window),
            max_output_tokens: self.max_output_tokens.unwrap_or(output),
        }
    }
}

/// How an API takes its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI and the servers that copy it, Ollama).
    Bearer,
    /// A header of its own (`x-api-key` for Anthropic, `x-goog-api-key` for Gemini).
    Named(&'static str),
}
