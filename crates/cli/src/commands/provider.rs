//! The one place the CLI builds a provider, for every command (`run`, `chat`,
//! `serve`, `agents list`): the configured API client wrapped in a
//! `ReliableProvider` with the default retry policy, so every command retries the same
//! way and falls back from a broken stream the same way.

use std::sync::Arc;

use oxydra::provider::{
    AnthropicProvider, GeminiProvider, OllamaProvider, OpenAiProvider, OpenAiResponsesProvider,
    Provider, ProviderConfig, ReliableProvider, RetryPolicy,
};

use crate::config::{Effective, EffectiveProvider, EffectiveRuntime, OpenAiApi, ProviderKind};

/// The provider of a run (`run`, `chat`).
pub fn of_run(effective: &Effective) -> Arc<dyn Provider> {
    build(&effective.provider, &effective.runtime)
}

/// A provider from its settings and the runtime's token overrides, with retries.
pub fn build(settings: &EffectiveProvider, runtime: &EffectiveRuntime) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new(
        settings.base_url.clone(),
        settings.api_key.as_ref().map(|key| key.expose().to_owned()),
    );
    // Named in a refused-key message. No key is sent only to a base_url of one's own
    // with no api_key_env: then the message says how to name one.
    if let Some(var) = settings.api_key_env.clone() {
        config = config.with_api_key_source(var);
    }
    if let Some(window) = runtime.context_window {
        config.context_window = Some(window);
    }
    if let Some(max_output) = runtime.max_output_tokens {
        config.max_output_tokens = Some(max_output);
    }
    if let Some(bytes) = settings.max_response_bytes {
        config = config.with_max_response_bytes(bytes);
    }
    if let Some(effort) = settings.reasoning_effort {
        config = config.with_reasoning_effort(effort.to_provider());
    }
    config.thinking_budget = settings.thinking_budget;
    let client: Arc<dyn Provider> = match settings.kind {
        ProviderKind::Openai if settings.api == Some(OpenAiApi::Responses) => {
            Arc::new(OpenAiResponsesProvider::new(config))
        }
        ProviderKind::Openai => Arc::new(OpenAiProvider::new(config)),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(config)),
        ProviderKind::Gemini => Arc::new(GeminiProvider::new(config)),
        ProviderKind::Ollama => Arc::new(OllamaProvider::new(config)),
    };
    Arc::new(ReliableProvider::new(client, RetryPolicy::default()))
}
