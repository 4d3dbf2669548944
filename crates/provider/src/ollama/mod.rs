//! The Ollama native API client (`/api/chat`).

mod stream;
mod wire;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::{KeyHeader, ProviderConfig};
use crate::error::ProviderError;
use crate::ndjson::NdjsonReader;
use crate::parts;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::transport::{complete_call, decode_whole_body, framed_stream_call};

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
        self.config
            .post_json(self.endpoint(), body, KeyHeader::Bearer)
    }
}

/// Parses a whole (non-streamed) `/api/chat` response.
fn parse_response(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    decode_whole_body(OllamaStreamDecoder::new(), body, "Ollama")
}

#[async_trait]
impl Provider for OllamaProvider {
    fn name(&self) -> &str {
        "ollama"
    }

    fn capabilities(&self, _model: &str) -> ProviderCapabilities {
        // Ollama's own default context; the model's real window is set per server.
        self.config.capabilities((4_096, 4_096))
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        wire::check_tool_choice(request)?;
        parts::check(self.name(), &parts::OLLAMA, &request.messages)?;
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
        wire::check_tool_choice(request)?;
        parts::check(self.name(), &parts::OLLAMA, &request.messages)?;
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
    fn bodies_are_written_as_serde_json_writes_them() {
        for request in crate::json_body::tests::rich_requests() {
            for stream in [false, true] {
                crate::json_body::tests::assert_same_bytes(&wire::request_body(&request, stream));
            }
        }
    }

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
