//! Picking the provider a run talks to: flags, then the environment, then the file's
//! `[provider]`, then whichever API key is set; and each kind's defaults.

use oxydra::provider::{ANTHROPIC_BASE_URL, ANTHROPIC_MIN_THINKING_BUDGET, OPENAI_BASE_URL};

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
            other => {
                return Err(CliError::Env {
                    var: "OXYDRA_PROVIDER".into(),
                    message: format!("expected `openai` or `anthropic`, found `{other}`"),
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
        None => return Err(CliError::NoProvider),
    };
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
    let thinking_budget = thinking_budget(file, flags, kind)?;
    Ok(EffectiveProvider {
        kind,
        base_url: base_url.unwrap_or_else(|| default_url.to_owned()),
        model,
        api_key_env,
        api_key,
        max_response_bytes: section.max_response_bytes,
        thinking_budget,
    })
}

/// `--thinking-budget`, else `[provider] thinking_budget`, checked against what the
/// provider accepts: never 0, at least 1024 for Anthropic, and not for OpenAI (whose
/// models take `--reasoning-effort` instead). The error names the flag or the key.
fn thinking_budget(
    file: &LoadedFile,
    flags: &RunOptions,
    kind: ProviderKind,
) -> Result<Option<u32>, CliError> {
    let Some(budget) = flags
        .thinking_budget
        .or(file.config.provider.thinking_budget)
    else {
        return Ok(None);
    };
    let problem = if budget == 0 {
        Some("expected a number of tokens above 0, found 0".to_owned())
    } else if kind == ProviderKind::Openai {
        Some(
            "a thinking budget applies to Anthropic and Gemini; OpenAI models take a \
             reasoning effort instead"
                .to_owned(),
        )
    } else if kind == ProviderKind::Anthropic && budget < ANTHROPIC_MIN_THINKING_BUDGET {
        Some(format!(
            "Anthropic needs at least {ANTHROPIC_MIN_THINKING_BUDGET} tokens, found {budget}"
        ))
    } else {
        None
    };
    let Some(message) = problem else {
        return Ok(Some(budget));
    };
    Err(match &file.path {
        Some(path) if flags.thinking_budget.is_none() => CliError::ConfigInvalid {
            path: path.clone(),
            key: "provider.thinking_budget".to_owned(),
            message: format!("invalid value for provider.thinking_budget: {message}"),
            line: None,
        },
        _ => CliError::Flag {
            flag: "--thinking-budget",
            message,
        },
    })
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
