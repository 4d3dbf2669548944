//! Picking the provider a run talks to: flags, then the environment, then the file's
//! `[provider]`, then whichever API key is set; and each kind's defaults.

use std::path::PathBuf;

use oxydra::provider::{ANTHROPIC_BASE_URL, OPENAI_BASE_URL};

use super::mask::Secret;
use super::merge::{EffectiveProvider, EnvLookup};
use super::{LoadedFile, ProviderKind};
use crate::args::RunOptions;
use crate::error::CliError;

/// Default model for OpenAI-compatible servers.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// Default model for Anthropic.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// The provider of a run: see docs/configuration.md, "How the provider is picked".
pub(super) fn merge_provider(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
) -> Result<EffectiveProvider, CliError> {
    let section = &file.config.provider;
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());

    let env_kind = match set("OXYDRA_PROVIDER") {
        Some(value) => Some(match value.trim() {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            "local" => ProviderKind::Local,
            other => {
                return Err(CliError::Env {
                    var: "OXYDRA_PROVIDER".into(),
                    message: format!("expected `openai`, `anthropic` or `local`, found `{other}`"),
                });
            }
        }),
        None => None,
    };
    let base_url = match (&flags.base_url, set("OXYDRA_BASE_URL")) {
        (Some(url), _) => Some(
            http_url(url)
                .map_err(|message| CliError::Flag {
                    flag: "--base-url",
                    message,
                })?
                .to_owned(),
        ),
        (None, Some(url)) => Some(
            http_url(&url)
                .map_err(|message| CliError::Env {
                    var: "OXYDRA_BASE_URL".into(),
                    message,
                })?
                .to_owned(),
        ),
        (None, None) => section.base_url.clone(),
    };
    let explicit_kind = flags.provider.or(env_kind).or(section.kind);
    let kind = match explicit_kind {
        Some(kind) => kind,
        None if base_url.is_some() || section.api_key_env.is_some() => ProviderKind::Openai,
        None if set("OPENAI_API_KEY").is_some() => ProviderKind::Openai,
        None if set("ANTHROPIC_API_KEY").is_some() => ProviderKind::Anthropic,
        // Nothing else configured: a local model, when one is at hand.
        None => match local_model_at_hand(section, flags, env) {
            Some(model) => return Ok(local_provider(section, model)),
            None => return Err(CliError::NoProvider),
        },
    };
    if kind == ProviderKind::Local {
        let model = flags
            .model
            .clone()
            .or_else(|| set("OXYDRA_MODEL"))
            .or_else(|| section.model.clone())
            .or_else(|| set(LOCAL_MODEL_VAR))
            .or_else(|| default_local_model().map(|path| path.display().to_string()))
            .ok_or(CliError::NoLocalModel)?;
        return Ok(local_provider(section, model));
    }
    let (default_var, default_url, default_model) = provider_defaults(kind);
    let (api_key_env, api_key) = if let Some(var) = &section.api_key_env {
        let origin = file.path.as_ref().map_or_else(
            || "api_key_env".to_owned(),
            |path| format!("api_key_env in {}", path.display()),
        );
        let key = set(var).ok_or_else(|| CliError::MissingApiKey {
            var: var.clone(),
            origin,
            base_url: base_url.clone().unwrap_or_else(|| default_url.to_owned()),
        })?;
        (Some(var.clone()), Some(Secret::new(key)))
    } else if base_url.is_some() {
        // A server of one's own (Ollama, vLLM …): no auth header unless a variable is named.
        (None, None)
    } else {
        let key = match (set(default_var), explicit_kind) {
            (Some(key), _) => key,
            // The provider was named (flag, environment or file) but has no key: say which.
            (None, Some(_)) => {
                let origin = if flags.provider.is_some() {
                    "--provider".to_owned()
                } else if env_kind.is_some() {
                    "OXYDRA_PROVIDER".to_owned()
                } else {
                    file.path.as_ref().map_or_else(
                        || "provider.kind".to_owned(),
                        |path| format!("provider.kind in {}", path.display()),
                    )
                };
                return Err(CliError::MissingApiKey {
                    var: default_var.to_owned(),
                    origin,
                    base_url: default_url.to_owned(),
                });
            }
            (None, None) => return Err(CliError::NoProvider),
        };
        (Some(default_var.to_owned()), Some(Secret::new(key)))
    };
    let model = flags
        .model
        .clone()
        .or_else(|| set("OXYDRA_MODEL"))
        .or_else(|| section.model.clone())
        .unwrap_or_else(|| default_model.to_owned());
    Ok(EffectiveProvider {
        kind,
        base_url: base_url.unwrap_or_else(|| default_url.to_owned()),
        model,
        api_key_env,
        api_key,
        max_response_bytes: section.max_response_bytes,
        threads: None,
    })
}

/// The variable that names a local model file.
pub const LOCAL_MODEL_VAR: &str = "OXYDRA_LOCAL_MODEL";

/// Where local models live: `<data dir>/oxydra/models` (downloads go under `hf/`).
pub fn models_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("models"))
}

/// The model used when nothing names one: `<data dir>/oxydra/models/default.gguf`,
/// if it exists.
pub fn default_local_model() -> Option<PathBuf> {
    models_dir()
        .map(|dir| dir.join("default.gguf"))
        .filter(|path| path.is_file())
}

/// Whether `model` names a local model: a `.gguf` file or an `hf:` download.
fn is_local_model(model: &str) -> bool {
    model.starts_with("hf:") || model.to_ascii_lowercase().ends_with(".gguf")
}

/// A local model to fall back on when no provider is configured: a `.gguf` named
/// by `--model` or `[provider] model`, then `OXYDRA_LOCAL_MODEL`, then the data
/// directory's default.
fn local_model_at_hand(
    section: &super::ProviderSection,
    flags: &RunOptions,
    env: EnvLookup<'_>,
) -> Option<String> {
    flags
        .model
        .clone()
        .or_else(|| section.model.clone())
        .filter(|model| is_local_model(model))
        .or_else(|| env(LOCAL_MODEL_VAR).filter(|value| !value.trim().is_empty()))
        .or_else(|| default_local_model().map(|path| path.display().to_string()))
}

fn local_provider(section: &super::ProviderSection, model: String) -> EffectiveProvider {
    EffectiveProvider {
        kind: ProviderKind::Local,
        base_url: "in-process".to_owned(),
        model,
        api_key_env: None,
        api_key: None,
        max_response_bytes: section.max_response_bytes,
        threads: section.threads,
    }
}

/// The standard API key variable, base URL and model of a provider kind.
pub fn provider_defaults(kind: ProviderKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        ProviderKind::Openai => ("OPENAI_API_KEY", OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL),
        ProviderKind::Anthropic => (
            "ANTHROPIC_API_KEY",
            ANTHROPIC_BASE_URL,
            DEFAULT_ANTHROPIC_MODEL,
        ),
        ProviderKind::Local => (LOCAL_MODEL_VAR, "in-process", ""),
    }
}

/// Checks that `url` is an `http(s)://` URL (a `base_url` from a flag, the environment
/// or the file): the URL without trailing `/`, or what is wrong.
pub(super) fn http_url(url: &str) -> Result<&str, String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.trim_end_matches('/'))
    } else {
        Err(format!(
            "expected an http:// or https:// URL, found `{url}`"
        ))
    }
}
