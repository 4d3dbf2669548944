//! The provider a run talks to: the layers of the CLI (flags, then the `OXYDRA_*`
//! variables, then the file's `[provider]`) give a kind, base URL and key variable;
//! `oxydra::provider::select` decides what the environment then selects (the first API
//! key set, and which key is sent); with nothing selected, the local model at hand.
//! Here too: the checks of the kind's settings that name a flag or a file key.

use std::path::PathBuf;

use serde::Serialize;

use super::mask::{Secret, mask_url};
use oxydra::provider::{PROVIDERS, ProviderChoice, ProviderInfo};
use oxydra_config::{LoadedFile, http_url};

use super::{EnvLookup, ProviderKind, ProviderSection, SamplingSection};
use crate::args::{Effort, OpenAiApi, RunOptions};
use crate::error::CliError;

/// The provider a run talks to.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveProvider {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL (`in-process` for the local model, not printed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// Model.
    pub model: String,
    /// The variable the key came from; `None`: no auth header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The key (never printed as a key: the file takes `api_key_env`).
    #[serde(skip)]
    pub api_key: Option<Secret>,
    /// `[provider] max_response_bytes`; `None`: the client's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<usize>,
    /// `[provider] first_byte_timeout_secs`; `None`: the client's default (60 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_timeout_secs: Option<u64>,
    /// The OpenAI API (`--api`, `[provider] api`); `None` for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<OpenAiApi>,
    /// `--reasoning-effort`, `[provider] reasoning_effort`; `None`: the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Effort>,
    /// `--thinking-budget` / `[provider] thinking_budget`; `None`: no thinking budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// `[provider] threads` of the local model; `None`: all cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// `[provider.sampling]` of the local model (a table: printed last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingSection>,
}

/// Whether a missing API key is an error ([`KeyNeed::Required`], for a run) or leaves
/// the provider without one ([`KeyNeed::Optional`], for `--print-config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyNeed {
    /// A run: the key's variable must be set.
    Required,
    /// Showing the configuration: an unset variable is said in a comment.
    Optional,
}

/// The provider of a run: see docs/configuration.md, "How the provider is picked".
pub fn merge_provider(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    need: KeyNeed,
) -> Result<EffectiveProvider, CliError> {
    let section = &file.config.provider;
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let untrusted_provider = |keys: Vec<String>| CliError::UntrustedProvider {
        path: file.path.clone().unwrap_or_default(),
        keys: keys.join(", "),
    };
    // An untrusted project file chose a provider that was ignored: running another one
    // silently would surprise, unless a flag or variable picks it.
    let chosen_here = flags.base_url.is_some()
        || flags.provider.is_some()
        || flags.model.is_some()
        || ["OXYDRA_BASE_URL", "OXYDRA_PROVIDER", "OXYDRA_MODEL"]
            .into_iter()
            .any(|name| set(name).is_some());
    let withheld: Vec<String> = file
        .ignored
        .iter()
        .filter(|ignored| {
            [
                "provider.base_url",
                "provider.api_key_env",
                "provider.model",
                "provider.kind",
            ]
            .contains(&ignored.key.as_str())
        })
        .map(ToString::to_string)
        .collect();
    if file.untrusted && !withheld.is_empty() && !chosen_here {
        return Err(untrusted_provider(withheld));
    }

    let env_kind = match set("OXYDRA_PROVIDER") {
        Some(value) => {
            Some(
                ProviderKind::from_name(value.trim()).ok_or_else(|| CliError::Env {
                    var: "OXYDRA_PROVIDER".into(),
                    message: format!(
                        "expected {}, found `{}`",
                        ProviderKind::listed(),
                        value.trim()
                    ),
                })?,
            )
        }
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
    let info = match explicit_kind {
        Some(ProviderKind::Http(info)) => Some(info),
        Some(ProviderKind::Local) => {
            let named = flags.model.clone().or_else(|| set("OXYDRA_MODEL"));
            if named.is_none() && section.model.is_some() && file.untrusted_model {
                // A name from an untrusted file, about to be loaded as a model file.
                return Err(untrusted_provider(vec!["provider.model".to_owned()]));
            }
            let model = named
                .or_else(|| section.model.clone())
                .or_else(|| set(LOCAL_MODEL_VAR))
                .or_else(|| default_local_model().map(|path| path.display().to_string()))
                .ok_or(CliError::NoLocalModel)?;
            return Ok(local_provider(section, model));
        }
        None => None,
    };
    // The provider crate decides what the environment selects (docs/provider.md).
    let choice = ProviderChoice {
        kind: info,
        base_url,
        api_key_var: section.api_key_env.clone(),
    };
    let Some(selection) = oxydra::provider::select(&choice, env) else {
        // Nothing else configured: a local model, when one is at hand.
        return match local_model_at_hand(section, flags, env) {
            Some(model) => Ok(local_provider(section, model)),
            None => Err(CliError::NoProvider),
        };
    };
    let info = selection.info;
    if let (Some(var), KeyNeed::Required) = (selection.missing_key(), need) {
        // A variable named by the file, or the kind's own for a kind named (flag,
        // environment or file) without its key: say which and where from.
        let origin = if section.api_key_env.is_some() {
            file.path.as_ref().map_or_else(
                || "api_key_env".to_owned(),
                |path| format!("api_key_env in {}", path.display()),
            )
        } else if flags.provider.is_some() {
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
            var: var.to_owned(),
            origin,
            base_url: mask_url(selection.base_url()),
        });
    }
    let kind = ProviderKind::Http(info);
    let model = flags
        .model
        .clone()
        .or_else(|| set("OXYDRA_MODEL"))
        .or_else(|| section.model.clone())
        .unwrap_or_else(|| info.default_model.to_owned());
    let (api, reasoning_effort) = openai_settings(file, flags, info)?;
    let thinking_budget = thinking_budget(file, flags, info)?;
    Ok(EffectiveProvider {
        kind,
        base_url: selection.base_url().to_owned(),
        model,
        api_key: selection.api_key.clone().map(Secret::new),
        api_key_env: selection.api_key_var,
        max_response_bytes: section.max_response_bytes,
        first_byte_timeout_secs: section.first_byte_timeout_secs,
        api,
        reasoning_effort,
        thinking_budget,
        threads: None,
        sampling: None,
    })
}

/// `--thinking-budget`, else `[provider] thinking_budget`, checked against what the
/// provider accepts (its row's `min_thinking_budget`): never 0, at least 1024 for
/// Anthropic, and not for OpenAI (whose models take `--reasoning-effort` instead). The
/// error names the flag or the key.
fn thinking_budget(
    file: &LoadedFile,
    flags: &RunOptions,
    info: &ProviderInfo,
) -> Result<Option<u32>, CliError> {
    let Some(budget) = flags
        .thinking_budget
        .or(file.config.provider.thinking_budget)
    else {
        return Ok(None);
    };
    let problem = match info.min_thinking_budget {
        _ if budget == 0 => Some("expected a number of tokens above 0, found 0".to_owned()),
        None => Some(format!(
            "a thinking budget applies to {}; {} models take a reasoning effort instead",
            budget_kinds(),
            info.display_name
        )),
        Some(least) if budget < least => Some(format!(
            "{} needs at least {least} tokens, found {budget}",
            info.display_name
        )),
        Some(_) => None,
    };
    let Some(message) = problem else {
        return Ok(Some(budget));
    };
    Err(match &file.path {
        Some(path) if flags.thinking_budget.is_none() => {
            CliError::Config(oxydra_config::ConfigError::Invalid {
                path: path.clone(),
                key: "provider.thinking_budget".to_owned(),
                message: format!("invalid value for provider.thinking_budget: {message}"),
                line: None,
            })
        }
        _ => CliError::Flag {
            flag: "--thinking-budget",
            message,
        },
    })
}

/// The OpenAI API and reasoning effort (flags, then the file's `[provider]`): the API
/// belongs to the kinds with a Responses client, the effort to those that take one
/// (both `openai`, per the table); set for another kind, they are an error naming the
/// flag or the key.
fn openai_settings(
    file: &LoadedFile,
    flags: &RunOptions,
    info: &ProviderInfo,
) -> Result<(Option<OpenAiApi>, Option<Effort>), CliError> {
    let section = &file.config.provider;
    let refuse =
        |flag: &'static str, key: &str, set_by_flag: bool, takes: fn(&ProviderInfo) -> bool| {
            let message = format!(
                "{} applies to provider kind {} only; this provider is `{}`",
                if set_by_flag { flag } else { key },
                kinds_that(takes),
                info.name
            );
            match (&file.path, set_by_flag) {
                (Some(path), false) => CliError::Config(oxydra_config::ConfigError::Invalid {
                    path: path.clone(),
                    key: key.to_owned(),
                    message: format!("invalid key {key}: {message}"),
                    line: None,
                }),
                _ => CliError::Flag { flag, message },
            }
        };
    let speaks_responses = |info: &ProviderInfo| info.build_responses.is_some();
    let api = if speaks_responses(info) {
        Some(flags.api.or(section.api).unwrap_or_default())
    } else if flags.api.is_some() || section.api.is_some() {
        return Err(refuse(
            "--api",
            "provider.api",
            flags.api.is_some(),
            speaks_responses,
        ));
    } else {
        None
    };
    let effort = flags.reasoning_effort.or(section.reasoning_effort);
    if effort.is_some() && !info.reasoning_effort {
        return Err(refuse(
            "--reasoning-effort",
            "provider.reasoning_effort",
            flags.reasoning_effort.is_some(),
            |info| info.reasoning_effort,
        ));
    }
    Ok((api, effort))
}

/// The kinds of the table for which `takes` holds, as a message lists them:
/// `` `openai` ``, or `` `openai` or `gemini` ``.
fn kinds_that(takes: fn(&ProviderInfo) -> bool) -> String {
    let names: Vec<String> = PROVIDERS
        .iter()
        .filter(|info| takes(info))
        .map(|info| format!("`{}`", info.name))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
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

/// A local model to fall back on when no provider is configured: a `.gguf` named
/// by `--model` or `[provider] model`, then `OXYDRA_LOCAL_MODEL`, then the data
/// directory's default.
fn local_model_at_hand(
    section: &ProviderSection,
    flags: &RunOptions,
    env: EnvLookup<'_>,
) -> Option<String> {
    flags
        .model
        .clone()
        .or_else(|| section.model.clone())
        .filter(|model| oxydra_config::is_local_model(model))
        .or_else(|| env(LOCAL_MODEL_VAR).filter(|value| !value.trim().is_empty()))
        .or_else(|| default_local_model().map(|path| path.display().to_string()))
}

fn local_provider(section: &ProviderSection, model: String) -> EffectiveProvider {
    EffectiveProvider {
        kind: ProviderKind::Local,
        base_url: "in-process".to_owned(),
        model,
        api_key_env: None,
        api_key: None,
        max_response_bytes: section.max_response_bytes,
        first_byte_timeout_secs: section.first_byte_timeout_secs,
        api: None,
        reasoning_effort: None,
        thinking_budget: None,
        threads: section.threads,
        sampling: section.sampling,
    }
}

/// The provider an agent gets with `provider = "<kind>"` when the configured one is of
/// another kind (or there is none): the kind's public API, when its standard key
/// variable is set. A keyless kind (a server of one's own) and the local model are
/// named only when they are the configured one.
pub fn public_provider(kind: ProviderKind, env: EnvLookup<'_>) -> Option<EffectiveProvider> {
    let info = kind.http().filter(|info| !info.keyless)?;
    let choice = ProviderChoice {
        kind: Some(info),
        ..ProviderChoice::default()
    };
    let selection = oxydra::provider::select(&choice, env)?;
    let key = selection.api_key.clone()?;
    Some(EffectiveProvider {
        kind,
        base_url: selection.base_url().to_owned(),
        model: info.default_model.to_owned(),
        api_key_env: selection.api_key_var,
        api_key: Some(Secret::new(key)),
        max_response_bytes: None,
        first_byte_timeout_secs: None,
        api: info.build_responses.map(|_| OpenAiApi::Chat),
        reasoning_effort: None,
        thinking_budget: None,
        threads: None,
        sampling: None,
    })
}

/// The kinds that take a thinking budget, as messages name them: `Anthropic and Gemini`.
fn budget_kinds() -> String {
    let names: Vec<&str> = PROVIDERS
        .iter()
        .filter(|info| info.min_thinking_budget.is_some())
        .map(|info| info.display_name)
        .collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn file(text: &str) -> LoadedFile {
        LoadedFile {
            path: Some(PathBuf::from("/etc/ox/oxydra.toml")),
            config: crate::config::parse(Path::new("/etc/ox/oxydra.toml"), text).unwrap(),
            ..LoadedFile::default()
        }
    }

    fn with_keys(name: &str) -> Option<String> {
        ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
            .contains(&name)
            .then(|| "sk-test".to_owned())
    }

    #[test]
    fn openai_defaults_to_chat_and_takes_the_file_then_the_flags() {
        let plain = merge_provider(
            &file(""),
            &RunOptions::default(),
            &with_keys,
            KeyNeed::Required,
        )
        .unwrap();
        assert_eq!(plain.api, Some(OpenAiApi::Chat));
        assert_eq!(plain.reasoning_effort, None);

        let loaded = file(
            "[provider]\nkind = \"openai\"\napi = \"responses\"\nreasoning_effort = \"low\"\n",
        );
        let from_file = merge_provider(
            &loaded,
            &RunOptions::default(),
            &with_keys,
            KeyNeed::Required,
        )
        .unwrap();
        assert_eq!(from_file.api, Some(OpenAiApi::Responses));
        assert_eq!(from_file.reasoning_effort, Some(Effort::Low));

        let flags = RunOptions {
            api: Some(OpenAiApi::Chat),
            reasoning_effort: Some(Effort::High),
            ..RunOptions::default()
        };
        let from_flags = merge_provider(&loaded, &flags, &with_keys, KeyNeed::Required).unwrap();
        assert_eq!(from_flags.api, Some(OpenAiApi::Chat));
        assert_eq!(from_flags.reasoning_effort, Some(Effort::High));
    }

    #[test]
    fn api_or_effort_with_another_kind_names_the_key_or_flag() {
        let loaded = file("[provider]\nkind = \"anthropic\"\napi = \"responses\"\n");
        let error = merge_provider(
            &loaded,
            &RunOptions::default(),
            &with_keys,
            KeyNeed::Required,
        )
        .unwrap_err();
        assert!(
            matches!(&error, CliError::Config(oxydra_config::ConfigError::Invalid { key, .. }) if key == "provider.api")
        );
        let text = error.to_string();
        assert!(
            text.contains("/etc/ox/oxydra.toml")
                && text.contains("provider.api")
                && text.contains("anthropic"),
            "{text}"
        );

        let flags = RunOptions {
            provider: ProviderKind::from_name("anthropic"),
            reasoning_effort: Some(Effort::Low),
            ..RunOptions::default()
        };
        let error = merge_provider(&file(""), &flags, &with_keys, KeyNeed::Required).unwrap_err();
        assert!(
            matches!(
                error,
                CliError::Flag {
                    flag: "--reasoning-effort",
                    ..
                }
            ),
            "{error}"
        );

        let loaded = file("[provider]\nkind = \"anthropic\"\nreasoning_effort = \"high\"\n");
        let error = merge_provider(
            &loaded,
            &RunOptions::default(),
            &with_keys,
            KeyNeed::Required,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("provider.reasoning_effort"),
            "{error}"
        );
    }

    #[test]
    fn unknown_values_are_refused_by_name() {
        let error = crate::config::parse(
            Path::new("/x/oxydra.toml"),
            "[provider]\napi = \"assistants\"\n",
        )
        .unwrap_err();
        assert!(error.to_string().contains("api"), "{error}");
        let error = crate::config::parse(
            Path::new("/x/oxydra.toml"),
            "[provider]\nreasoning_effort = \"extreme\"\n",
        )
        .unwrap_err();
        assert!(error.to_string().contains("reasoning_effort"), "{error}");
    }
}
