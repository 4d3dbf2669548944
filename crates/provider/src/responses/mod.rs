//! The OpenAI Responses API client (`POST {base_url}/responses`): OpenAI itself and
//! servers that copy it (LM Studio's `/v1/responses`).

mod stream;
mod wire;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::{KeyHeader, ProviderConfig};
use crate::error::ProviderError;
use crate::openai::{known_limits, tool_names};
use crate::parts;
use crate::provider::{Provider, ProviderCapabilities, ProviderStream};
use crate::request::{ProviderRequest, ProviderResponse};
use crate::text_tool_calls::recover_in_response;
use crate::transport::{complete_call, stream_call};

pub use stream::OpenAiResponsesStreamDecoder;

/// A client for the Responses API.
///
/// Every request is stateless (`store: false`) and carries the whole conversation:
/// system messages as `instructions`, then user and assistant messages, function calls
/// and their `function_call_output`s as `input` items. A reasoning model's `reasoning`
/// items (with `include: ["reasoning.encrypted_content"]`) are kept on the assistant
/// message as [`ReasoningPart::Reasoning`](oxydra_types::ReasoningPart::Reasoning)
/// and sent back, unchanged and before the calls they led to, on the next request.
/// [`ProviderConfig::reasoning_effort`] becomes `reasoning: {effort, summary: "auto"}`,
/// so that reasoning summaries stream as reasoning deltas.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesProvider {
    config: ProviderConfig,
    name: String,
}

impl OpenAiResponsesProvider {
    /// A client for the Responses API at `config.base_url` (e.g.
    /// `https://api.openai.com/v1`, `http://localhost:1234/v1` for LM Studio).
    pub fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            name: "openai-responses".to_owned(),
        }
    }

    /// The same client, reporting `name` in logs.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("{}/responses", self.config.base())
    }

    fn request(&self, body: &impl serde::Serialize) -> reqwest::RequestBuilder {
        self.config
            .post_json(self.endpoint(), body, KeyHeader::Bearer)
    }
}

#[async_trait]
impl Provider for OpenAiResponsesProvider {
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
            |bytes| {
                let mut response = wire::parse_response(bytes)?;
                let reasoning = std::mem::take(&mut response.message.reasoning);
                let mut response = recover_in_response(response, &tools);
                response.message.reasoning = reasoning;
                Ok(response)
            },
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
            OpenAiResponsesStreamDecoder::with_tools(tool_names(request))
                .with_skip_limit(self.config.max_wire_bytes().saturating_mul(4)),
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
            for effort in [None, Some(crate::ReasoningEffort::Low)] {
                for stream in [false, true] {
                    let body = wire::request_body(&request, effort, stream);
                    crate::json_body::tests::assert_same_bytes(&body);
                }
            }
        }
    }

    #[test]
    fn endpoint_and_limits() {
        let provider =
            OpenAiResponsesProvider::new(ProviderConfig::new("http://localhost:1234/v1/", None));
        assert_eq!(provider.endpoint(), "http://localhost:1234/v1/responses");
        assert_eq!(provider.capabilities("gpt-5-mini").context_window, 400_000);
        assert_eq!(provider.name(), "openai-responses");
    }
}
