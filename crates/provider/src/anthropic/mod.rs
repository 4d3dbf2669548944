//! The Anthropic Messages client.

mod request;
mod stream;
mod wire;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::{KeyHeader, ProviderConfig};
use crate::error::ProviderError;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::transport::{complete_call, stream_call};

pub use request::{ANTHROPIC_MIN_THINKING_BUDGET, DEFAULT_MAX_TOKENS};
pub use stream::AnthropicStreamDecoder;

/// Anthropic's API root.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A client for `POST {base_url}/v1/messages`.
///
/// Sends `x-api-key` (when a key is configured) and `anthropic-version: 2023-06-01`;
/// lifts system messages into `system`; maps tool calls to `tool_use` blocks and
/// tool results to `tool_result` blocks (consecutive results in one user message);
/// sends `max_tokens` = [`DEFAULT_MAX_TOKENS`] when the request names none.
/// A `base_url` ending in `/v1` is accepted too.
///
/// With [`ProviderConfig::thinking_budget`] set (at least [`ANTHROPIC_MIN_THINKING_BUDGET`]),
/// extended thinking is on: `thinking` and `redacted_thinking` blocks come back as
/// the message's [`ReasoningPart`](oxydra_types::ReasoningPart)s (thinking text also
/// streams as reasoning deltas) and are sent back unchanged, first in that assistant
/// message, on every later request. Prompt caching is always on: the last tool, the
/// system prompt and the newest message carry `cache_control: ephemeral`, so each
/// request reads the previous one's prefix from the cache; usage reports the whole
/// prompt in `input_tokens`, cache reads in `cached_tokens` and cache writes in
/// `cache_write_tokens`.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    config: ProviderConfig,
}

impl AnthropicProvider {
    /// A client for the Anthropic-compatible server at `config.base_url`.
    pub fn new(config: ProviderConfig) -> Self {
        Self { config }
    }

    /// A client for Anthropic itself.
    pub fn anthropic(api_key: impl Into<String>) -> Self {
        Self::new(ProviderConfig::new(
            ANTHROPIC_BASE_URL,
            Some(api_key.into()),
        ))
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        let base = self.config.base();
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    fn request(&self, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.config
            .post_json(self.endpoint(), body, KeyHeader::Named("x-api-key"))
            .header("anthropic-version", ANTHROPIC_VERSION)
    }
}

/// Largest output by model family.
fn max_output(model: &str) -> u32 {
    let name = model.rsplit('/').next().unwrap_or(model);
    const LIMITS: &[(&str, u32)] = &[
        ("claude-opus-4-5", 64_000),
        ("claude-opus-4", 32_000),
        ("claude-sonnet-4", 64_000),
        ("claude-haiku-4", 64_000),
        ("claude-3-7-sonnet", 64_000),
        ("claude-3-5", 8_192),
        ("claude-3", 4_096),
    ];
    LIMITS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(8_192, |(_, output)| *output)
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        self.config.capabilities((200_000, max_output(model)))
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let body = request::request_body(request, false, self.config.thinking_budget)?;
        complete_call(
            self.name(),
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            wire::parse_response,
        )
        .await
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let body = request::request_body(request, true, self.config.thinking_budget)?;
        stream_call(
            self.name(),
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            AnthropicStreamDecoder::new(),
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
            for (stream, budget) in [(false, None), (true, Some(2_048))] {
                let body = request::request_body(&request, stream, budget).unwrap();
                crate::json_body::tests::assert_same_bytes(&body);
            }
        }
    }

    #[test]
    fn endpoint_and_limits() {
        let provider = AnthropicProvider::new(ProviderConfig::new("http://127.0.0.1:9/v1/", None));
        assert_eq!(provider.endpoint(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(
            AnthropicProvider::anthropic("k").endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            provider
                .capabilities("claude-sonnet-4-20250514")
                .max_output_tokens,
            64_000
        );
        assert_eq!(
            provider
                .capabilities("claude-3-5-haiku-latest")
                .max_output_tokens,
            8_192
        );
        assert_eq!(provider.capabilities("x").context_window, 200_000);
    }
}
