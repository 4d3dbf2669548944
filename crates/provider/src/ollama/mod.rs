//! The Ollama native API client (`/api/chat`).

mod stream;
mod wire;

use std::collections::VecDeque;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::accumulator::StreamAccumulator;
use crate::config::ProviderConfig;
use crate::error::ProviderError;
use crate::ndjson::NdjsonReader;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::transport::{complete_call, framed_stream_call};

pub use stream::OllamaStreamDecoder;

/// A local Ollama server's root.
pub const OLLAMA_BASE_URL: &str = "http://localhost:11434";

/// A client for Ollama's native `POST {base_url}/api/chat`, streamed as
/// newline-delimited JSON (`application/x-ndjson`).
///
/// Sends tool calls with their arguments as JSON objects and tool results with their
/// `tool_name`; reads `message.thinking` as reasoning text and each whole tool call of
/// a line as one call. Sends `Authorization: Bearer` only when a key is configured
/// (Ollama's cloud). A `base_url` ending in `/api` or `/v1` is accepted too.
#[derive(Debug, Clone)]
pub struct OllamaProvider {
    config: ProviderConfig,
}

impl OllamaProvider {
    /// A client for the Ollama server at `config.base_url`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        let base = self.config.base();
        let base = base
            .strip_suffix("/api")
            .or_else(|| base.strip_suffix("/v1"))
            .unwrap_or(base);
        format!("{base}/api/chat")
    }

    fn request(&self, body: &serde_json::Value) -> reqwest::RequestBuilder {
        let mut builder = self.config.client.post(self.endpoint()).json(body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        for (name, value) in &self.config.extra_headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
    }
}

/// Parses a whole (non-streamed) `/api/chat` response.
fn parse_response(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    let text = String::from_utf8_lossy(body);
    let mut decoder = OllamaStreamDecoder::new();
    let mut items = VecDeque::new();
    decoder.decode_data(&text, &mut items)?;
    if !decoder.is_done() {
        return Err(ProviderError::Decode {
            what: "Ollama response without \"done\": true".into(),
            excerpt: crate::http_error::excerpt(&text),
        });
    }
    let mut accumulator = StreamAccumulator::new();
    items.iter().for_each(|item| accumulator.push(item));
    accumulator.finish()
}

#[async_trait]
impl Provider for OllamaProvider {
    fn name(&self) -> &str {
        "ollama"
    }

    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        ProviderCapabilities {
            streaming: true,
            tool_calling: true,
            parallel_tool_calls: true,
            // Ollama's own default context; the model's real window is set per server.
            context_window: self.config.context_window.unwrap_or(4_096),
            max_output_tokens: self.config.max_output_tokens.unwrap_or(4_096),
        }
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let body = wire::request_body(request, false);
        complete_call(
            self.name(),
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            parse_response,
        )
        .await
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let body = wire::request_body(request, true);
        framed_stream_call(
            self.name(),
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            NdjsonReader::new(),
            OllamaStreamDecoder::new(),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_accepts_api_and_v1_roots() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/api",
            "http://h:1/v1/",
        ] {
            let provider = OllamaProvider::new(ProviderConfig::new(base, None));
            assert_eq!(provider.endpoint(), "http://h:1/api/chat", "{base}");
        }
    }

    #[test]
    fn a_whole_response_parses() {
        let response = parse_response(
            br#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":2}"#,
        )
        .unwrap();
        assert_eq!(
            response.finish_reason,
            oxydra_types::FinishReason::ToolCalls
        );
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"a":1}"#);
        assert!(parse_response(br#"{"message":{"content":"x"},"done":false}"#).is_err());
    }
}
