//! The Gemini API client (`generateContent`).

mod stream;
mod wire;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::{KeyHeader, ProviderConfig};
use crate::error::ProviderError;
use crate::parts;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::transport::{complete_call, decode_whole_body, stream_call};

pub use stream::GeminiStreamDecoder;

/// The Gemini API's root.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A client for `POST {base_url}/v1beta/models/{model}:generateContent` and
/// `:streamGenerateContent?alt=sse`.
///
/// Sends the key in `x-goog-api-key` (when one is configured); lifts system messages
/// into `systemInstruction`; sends assistant messages as `model` contents with a text
/// part and one `functionCall` part per call, and tool results as `functionResponse`
/// parts (the results of one turn in one `user` content). Function calls get fresh,
/// unique ids from the client (the API sends none); each `thoughtSignature` is kept
/// on the assistant message and sent back on the part it came on. Tools are declared
/// with their JSON Schema in `parametersJsonSchema`. Thinking models (Gemini 2.5 and
/// later) get `thinkingConfig.includeThoughts` and, when configured,
/// `thinkingBudget`; their thought summaries come out as reasoning text. A
/// `base_url` ending in `/v1beta` is accepted too.
#[derive(Debug, Clone)]
pub struct GeminiProvider {
    config: ProviderConfig,
}

impl GeminiProvider {
    /// A client for the Gemini-compatible server at `config.base_url`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }

    /// A client for Google's Gemini API.
    pub fn gemini(api_key: impl Into<String>) -> Self {
        Self::new(ProviderConfig::new(GEMINI_BASE_URL, Some(api_key.into())))
    }

    /// The endpoint URL for `model`, streamed or not.
    pub fn endpoint(&self, model: &str, stream: bool) -> String {
        let base = self.config.base();
        let base = base.strip_suffix("/v1beta").unwrap_or(base);
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/v1beta/models/{model}:generateContent")
        }
    }

    fn request(
        &self,
        model: &str,
        stream: bool,
        body: &serde_json::Value,
    ) -> reqwest::RequestBuilder {
        self.config.post_json(
            self.endpoint(model, stream),
            body,
            KeyHeader::Named("x-goog-api-key"),
        )
    }
}

/// Context window and largest output by model family.
fn limits(model: &str) -> (u32, u32) {
    let name = model.rsplit('/').next().unwrap_or(model);
    if name.starts_with("gemini-1.5-pro") {
        (2_097_152, 8_192)
    } else if name.starts_with("gemini-1") || name.starts_with("gemini-2.0") {
        (1_048_576, 8_192)
    } else {
        (1_048_576, 65_536)
    }
}

/// Parses a whole (non-streamed) `generateContent` response.
fn parse_response(body: &[u8]) -> Result<ProviderResponse, ProviderError> {
    decode_whole_body(GeminiStreamDecoder::new(), body, "Gemini")
}

#[async_trait]
impl Provider for GeminiProvider {
    fn name(&self) -> &str {
        "gemini"
    }

    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        self.config.capabilities(limits(model))
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        parts::check(self.name(), &parts::GEMINI, &request.messages)?;
        let body = wire::request_body(request, self.config.thinking_budget);
        complete_call(
            self.name(),
            &request.model,
            self.request(&request.model, false, &body),
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
        parts::check(self.name(), &parts::GEMINI, &request.messages)?;
        let body = wire::request_body(request, self.config.thinking_budget);
        stream_call(
            self.name(),
            &request.model,
            self.request(&request.model, true, &body),
            &self.config,
            cancel,
            GeminiStreamDecoder::new(),
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
            for budget in [None, Some(1_024)] {
                crate::json_body::tests::assert_same_bytes(&wire::request_body(&request, budget));
            }
        }
    }

    #[test]
    fn endpoints_and_limits() {
        let provider = GeminiProvider::new(ProviderConfig::new("http://127.0.0.1:9/v1beta/", None));
        assert_eq!(
            provider.endpoint("gemini-2.5-flash", true),
            "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            GeminiProvider::gemini("k").endpoint("models/gemini-2.5-pro", false),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
        );
        assert_eq!(
            provider.capabilities("gemini-2.5-pro").max_output_tokens,
            65_536
        );
        assert_eq!(
            provider.capabilities("gemini-2.0-flash").max_output_tokens,
            8_192
        );
        assert_eq!(provider.capabilities("x").context_window, 1_048_576);
    }

    #[test]
    fn a_whole_response_without_finish_is_refused() {
        let error = parse_response(br#"{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}"#)
            .unwrap_err();
        assert!(matches!(error, ProviderError::Decode { .. }), "{error}");
        assert!(matches!(
            parse_response(b"<html>"),
            Err(ProviderError::Decode { .. })
        ));
    }
}
