//! The OpenAI-compatible chat-completions client (OpenAI, OpenRouter, Ollama, vLLM,
//! llama.cpp servers).

mod stream;
pub(crate) mod text_hold;
mod wire;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::{KeyHeader, ProviderConfig};
use crate::error::ProviderError;
use crate::parts;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::text_tool_calls::recover_in_response;
use crate::transport::{complete_call, stream_call};

pub use stream::OpenAiStreamDecoder;

/// OpenAI's own API root.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A client for `POST {base_url}/chat/completions`.
///
/// Sends `Authorization: Bearer <key>` when a key is configured and no auth header
/// otherwise (local servers). Streams with `stream_options.include_usage`, assembles
/// nothing itself: tool-call deltas are handed on by `index` (see
/// [`StreamAccumulator`](crate::StreamAccumulator)). A tool call a local model wrote
/// as text (`<tool_call>…</tool_call>`, a fenced `{"name", "arguments"}` block, a
/// gemma `tool_code` call) is recovered when it names one of the request's tools and
/// the response has no real tool calls.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: ProviderConfig,
    name: String,
}

impl OpenAiProvider {
    /// A client for the OpenAI-compatible server at `config.base_url`
    /// (e.g. `http://localhost:11434/v1` for Ollama).
    pub fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            name: "openai".to_owned(),
        }
    }

    /// A client for OpenAI itself.
    pub fn openai(api_key: impl Into<String>) -> Self {
        Self::new(ProviderConfig::new(OPENAI_BASE_URL, Some(api_key.into())))
    }

    /// The same client, reporting `name` in logs (`openrouter`, `ollama`, …).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.config.base())
    }

    /// The body this client posts for `request` (`stream`: whether it asks for a
    /// stream), as a value to serialise: what `complete` and `stream` send, for
    /// inspecting a request or measuring what writing it costs.
    pub fn request_body<'a>(
        &self,
        request: &'a ProviderRequest,
        stream: bool,
    ) -> impl serde::Serialize + use<'a> {
        wire::request_body(request, self.config.reasoning_effort, stream)
    }

    fn request(&self, body: &impl serde::Serialize) -> reqwest::RequestBuilder {
        self.config
            .post_json(self.endpoint(), body, KeyHeader::Bearer)
    }
}

/// The names of the request's tools: tool calls written as text are recovered only
/// when they name one of these (none when the request forbids tool calls).
pub(crate) fn tool_names(request: &ProviderRequest) -> Vec<String> {
    if request.tool_choice == crate::request::ToolChoice::None {
        return Vec::new();
    }
    request.tools.iter().map(|tool| tool.name.clone()).collect()
}

/// Known limits of OpenAI models by name prefix: (context window, max output).
pub(crate) fn known_limits(model: &str) -> (u32, u32) {
    let name = model.rsplit('/').next().unwrap_or(model);
    const LIMITS: &[(&str, u32, u32)] = &[
        ("gpt-5", 400_000, 128_000),
        ("gpt-4.1", 1_047_576, 32_768),
        ("gpt-4o", 128_000, 16_384),
        ("gpt-4-turbo", 128_000, 4_096),
        ("gpt-4", 8_192, 8_192),
        ("gpt-3.5-turbo", 16_385, 4_096),
        ("o1-mini", 128_000, 65_536),
        ("o1", 200_000, 100_000),
        ("o3", 200_000, 100_000),
        ("o4-mini", 200_000, 100_000),
    ];
    LIMITS
        .iter()
        .filter(|(prefix, _, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|(_, window, output)| (*window, *output))
        .unwrap_or((32_768, 4_096))
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        self.config.capabilities(known_limits(model))
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        parts::check(&self.name, &parts::OPENAI, &request.messages)?;
        let body = wire::request_body(request, self.config.reasoning_effort, false);
        let tools = tool_names(request);
        complete_call(
            &self.name,
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            |bytes| wire::parse_completion(bytes).map(|r| recover_in_response(r, &tools)),
        )
        .await
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        parts::check(&self.name, &parts::OPENAI, &request.messages)?;
        let body = wire::request_body(request, self.config.reasoning_effort, true);
        stream_call(
            &self.name,
            &request.model,
            self.request(&body),
            &self.config,
            cancel,
            OpenAiStreamDecoder::with_tools(tool_names(request)),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_model_and_config() {
        let provider = OpenAiProvider::openai("k");
        assert_eq!(provider.capabilities("gpt-4o-mini").context_window, 128_000);
        assert_eq!(
            provider.capabilities("o1-mini-2024").max_output_tokens,
            65_536
        );
        assert_eq!(provider.capabilities("llama3.2").context_window, 32_768);
        let local = OpenAiProvider::new(
            ProviderConfig::new("http://localhost:11434/v1/", None).with_limits(8_192, 1_024),
        );
        assert_eq!(local.capabilities("llama3.2").context_window, 8_192);
        assert_eq!(
            local.endpoint(),
            "http://localhost:11434/v1/chat/completions"
        );
    }
}
