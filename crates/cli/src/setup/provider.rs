//! The one place the CLI builds a provider, for every command (`run`, `chat`,
//! `serve`, `agents list`): the configured API client wrapped in a
//! `ReliableProvider` with the default retry policy, so every command retries the same
//! way and falls back from a broken stream the same way; or the local model,
//! downloaded if need be and loaded once per process. The fallback models
//! (`[[provider.fallback]]`) are added to the same `ReliableProvider`, each an API
//! client of its own with its own key.
//!
//! Which failures move on to a fallback is the provider crate's rule
//! (`ReliableProvider`): overloaded, a server error, a rate limit or a timeout past the
//! retries, and a context-length refusal when the next model's window is larger. An
//! authentication error, a bad request or a cancellation never do: a refused key is a
//! configuration error to report, not a reason to send the conversation elsewhere.

use std::sync::Arc;

use oxydra::provider::{Provider, ProviderConfig, ReliableProvider, RetryPolicy};

use oxydra::runtime::RuntimeLimits;

use crate::config::{Effective, EffectiveProvider, OpenAiApi};
use crate::error::CliError;

/// The provider of a run (`run`, `chat`).
pub async fn of_run(effective: &Effective) -> Result<Arc<dyn Provider>, CliError> {
    build(&effective.provider, &effective.runtime.limits).await
}

/// A provider from its settings and the runtime's token overrides, with retries and
/// its fallback models.
pub async fn build(
    settings: &EffectiveProvider,
    limits: &RuntimeLimits,
) -> Result<Arc<dyn Provider>, CliError> {
    let primary = match settings.kind.http() {
        Some(info) => http_client(info, settings, limits),
        None if settings.fallback.is_empty() => return local(settings, limits).await,
        // A local model with fallbacks: its errors are not of the kinds retried, but
        // one of the kinds that move on still does.
        None => local(settings, limits).await?,
    };
    let mut reliable = ReliableProvider::new(primary, RetryPolicy::default());
    for fallback in &settings.fallback {
        // Checked when merged: every fallback is an HTTP API.
        let Some(info) = fallback.kind.http() else {
            continue;
        };
        let client = http_client(info, fallback, limits);
        reliable = reliable.with_fallback_model(client, fallback.model.clone());
    }
    Ok(Arc::new(reliable))
}

/// The API client of an HTTP provider, without retries.
fn http_client(
    info: &'static oxydra::provider::ProviderInfo,
    settings: &EffectiveProvider,
    limits: &RuntimeLimits,
) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new(
        settings.base_url.clone(),
        settings.api_key.as_ref().map(|key| key.expose().to_owned()),
    );
    // Named in a refused-key message. No key is sent only to a base_url of one's own
    // with no api_key_env: then the message says how to name one.
    if let Some(var) = settings.api_key_env.clone() {
        config = config.with_api_key_source(var);
    }
    if let Some(window) = limits.context_window {
        config.context_window = Some(window);
    }
    if let Some(max_output) = limits.max_output_tokens {
        config.max_output_tokens = Some(max_output);
    }
    if let Some(bytes) = settings.max_response_bytes {
        config = config.with_max_response_bytes(bytes);
    }
    if let Some(secs) = settings.first_byte_timeout_secs {
        config = config.with_first_byte_timeout(std::time::Duration::from_secs(secs));
    }
    if let Some(effort) = settings.reasoning_effort {
        config = config.with_reasoning_effort(effort.to_provider());
    }
    config.thinking_budget = settings.thinking_budget;
    // The kind's constructor from the provider crate's table: its Responses client
    // when `api = "responses"` and it has one.
    let build = match info.build_responses {
        Some(responses) if settings.api == Some(OpenAiApi::Responses) => responses,
        _ => info.build,
    };
    build(config)
}

/// The local model: its file (downloaded first for `hf:` names), loaded on a
/// blocking thread, or found already loaded. Not wrapped in retries: its failures
/// do not pass by waiting.
#[cfg(feature = "local")]
async fn local(
    settings: &EffectiveProvider,
    limits: &RuntimeLimits,
) -> Result<Arc<dyn Provider>, CliError> {
    use oxydra::local::{LocalConfig, LocalProvider};

    let failed = |message: String| CliError::LocalModel {
        model: settings.model.clone(),
        message,
    };
    let models_dir = crate::config::models_dir();
    let path = crate::local_model::resolve(
        &settings.model,
        models_dir.as_deref(),
        settings.hf_endpoint.as_deref(),
    )
    .await
    .map_err(failed)?;
    let mut config = LocalConfig::new(path);
    config.threads = settings.threads.and_then(std::num::NonZeroU32::new);
    if let Some(window) = limits.context_window {
        config.max_context = window;
    }
    if let Some(sampling) = settings.sampling {
        config.sampling = sampling;
    }
    let provider = LocalProvider::load_async(config)
        .await
        .map_err(|error| failed(error.to_string()))?;
    Ok(Arc::new(provider))
}

/// Without the `local` feature there is no local model to build.
#[cfg(not(feature = "local"))]
async fn local(
    settings: &EffectiveProvider,
    _limits: &RuntimeLimits,
) -> Result<Arc<dyn Provider>, CliError> {
    Err(CliError::LocalModel {
        model: settings.model.clone(),
        message: "this oxydra was built without the local provider (cargo feature `local`)".into(),
    })
}
