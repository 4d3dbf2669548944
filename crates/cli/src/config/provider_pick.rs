//! The provider a run talks to: the layers of the CLI (flags, then the `OXYDRA_*`
//! variables, then the file's `[provider]`) give a kind, base URL and key variable;
//! `oxydra::provider::select` decides what the environment then selects (the first API
//! key set, and which key is sent); with nothing selected, the local model at hand.
//! Here too: the checks of the kind's settings that name a flag or a file key.

use std::path::PathBuf;

use serde::Serialize;

use super::mask::{Secret, mask_url};
use oxydra::provider::ProviderChoice;
use oxydra_config::{LoadedFile, http_url};

use super::provider_checks::{openai_settings, thinking_budget};
use super::{EnvLookup, ProviderKind, ProviderSection};
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
    pub sampling: Option<oxydra::provider::SamplingOverrides>,
    /// Where an `hf:` model name is downloaded from (`HF_ENDPOINT`; `None`: Hugging
    /// Face). Local models only; not a file setting.
    #[serde(skip)]
    pub hf_endpoint: Option<String>,
    /// `[[provider.fallback]]`: the models that take a turn this one failed after its
    /// retries, in order (printed last, as tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<EffectiveProvider>,
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

/// The provider of a run: see docs/configuration.md, "How the provider is picked"
/// (without its fallback models: [`super::fallbacks::merge_provider`] adds them).
pub fn merge_provider(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    need: KeyNeed,
) -> Result<EffectiveProvider, CliError> {
    let section = &file.config.provider;
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let set: EnvLookup<'_> = &set;
    refuse_withheld_choice(file, flags, set)?;
    let env_kind = env_kind(set)?;
    let base_url = base_url(flags, section, set)?;
    let info = match flags.provider.or(env_kind).or(section.kind) {
        Some(ProviderKind::Http(info)) => Some(info),
        Some(ProviderKind::Local) => return named_local_model(file, flags, set),
        None => None,
    };
    // The provider crate decides what the environment selects (docs/provider.md).
    let choice = ProviderChoice {
        kind: info,
        base_url,
        api_key_var: match &flags.api_key_env {
            Some(var) => Some(variable_name(var)?.to_owned()),
            None => section.api_key_env.clone(),
        },
    };
    let Some(selection) = oxydra::provider::select(&choice, env) else {
        // Nothing else configured: a local model, when one is at hand.
        return match local_model_at_hand(section, flags, env) {
            Some(model) => Ok(local_provider(section, model, env)),
            None => Err(CliError::NoProvider),
        };
    };
    if let (Some(var), KeyNeed::Required) = (selection.missing_key(), need) {
        return Err(CliError::MissingApiKey {
            var: var.to_owned(),
            origin: key_origin(file, flags, env_kind),
            base_url: mask_url(selection.base_url()),
        });
    }
    http_provider(file, flags, set, selection)
}

/// An untrusted project file chose a provider that was ignored: running another one
/// silently would surprise, unless a flag or variable picks it.
fn refuse_withheld_choice(
    file: &LoadedFile,
    flags: &RunOptions,
    set: EnvLookup<'_>,
) -> Result<(), CliError> {
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
        return Err(untrusted_provider(file, withheld));
    }
    Ok(())
}

/// The error for a provider an untrusted file chose, naming the keys ignored.
fn untrusted_provider(file: &LoadedFile, keys: Vec<String>) -> CliError {
    CliError::UntrustedProvider {
        path: file.path.clone().unwrap_or_default(),
        keys: keys.join(", "),
    }
}

/// `OXYDRA_PROVIDER`, checked.
fn env_kind(set: EnvLookup<'_>) -> Result<Option<ProviderKind>, CliError> {
    let Some(value) = set("OXYDRA_PROVIDER") else {
        return Ok(None);
    };
    ProviderKind::from_name(value.trim())
        .map(Some)
        .ok_or_else(|| CliError::Env {
            var: "OXYDRA_PROVIDER".into(),
            message: format!(
                "expected {}, found `{}`",
                ProviderKind::listed(),
                value.trim()
            ),
        })
}

/// `--base-url`, else `OXYDRA_BASE_URL` (each checked, without a trailing `/`), else
/// the file's (checked when the file was read, kept as written).
fn base_url(
    flags: &RunOptions,
    section: &ProviderSection,
    set: EnvLookup<'_>,
) -> Result<Option<String>, CliError> {
    Ok(match (&flags.base_url, set("OXYDRA_BASE_URL")) {
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
    })
}

/// The local model when the kind `local` is named: the flag's or variable's model, the
/// file's (unless an untrusted file named it), `OXYDRA_LOCAL_MODEL`, or the default file.
fn named_local_model(
    file: &LoadedFile,
    flags: &RunOptions,
    set: EnvLookup<'_>,
) -> Result<EffectiveProvider, CliError> {
    let section = &file.config.provider;
    let named = flags.model.clone().or_else(|| set("OXYDRA_MODEL"));
    if named.is_none() && section.model.is_some() && file.untrusted_model {
        // A name from an untrusted file, about to be loaded as a model file.
        return Err(untrusted_provider(file, vec!["provider.model".to_owned()]));
    }
    let model = named
        .or_else(|| section.model.clone())
        .or_else(|| set(LOCAL_MODEL_VAR))
        .or_else(|| default_local_model().map(|path| path.display().to_string()))
        .ok_or(CliError::NoLocalModel)?;
    Ok(local_provider(section, model, set))
}

/// Where the key variable that is not set was asked for: the file's `api_key_env`, or
/// the kind named by a flag, the environment or the file.
fn key_origin(file: &LoadedFile, flags: &RunOptions, env_kind: Option<ProviderKind>) -> String {
    let in_file = |key: &str| {
        file.path.as_ref().map_or_else(
            || key.to_owned(),
            |path| format!("{key} in {}", path.display()),
        )
    };
    if flags.api_key_env.is_some() {
        "--api-key-env".to_owned()
    } else if file.config.provider.api_key_env.is_some() {
        in_file("api_key_env")
    } else if flags.provider.is_some() {
        "--provider".to_owned()
    } else if env_kind.is_some() {
        "OXYDRA_PROVIDER".to_owned()
    } else {
        in_file("provider.kind")
    }
}

/// `--api-key-env`'s variable name, checked: letters, digits and `_`, not starting
/// with a digit (a typo such as `$OPENAI_API_KEY` or a key pasted in its place is
/// refused, and the refusal never repeats what was given when it looks like a key).
fn variable_name(var: &str) -> Result<&str, CliError> {
    let var = var.trim();
    let valid = var
        .bytes()
        .next()
        .is_some_and(|first| first == b'_' || first.is_ascii_alphabetic())
        && var.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric());
    if valid && var.len() <= 128 {
        return Ok(var);
    }
    let message = if var.starts_with('$') {
        "expected a variable's name: leave out the `$`".to_owned()
    } else {
        "expected the name of an environment variable (letters, digits and `_`), \
         not its value"
            .to_owned()
    };
    Err(CliError::Flag {
        flag: "--api-key-env",
        message,
    })
}

/// An HTTP provider from what the environment selected, the model and the kind's own
/// settings.
fn http_provider(
    file: &LoadedFile,
    flags: &RunOptions,
    set: EnvLookup<'_>,
    selection: oxydra::provider::Selection,
) -> Result<EffectiveProvider, CliError> {
    let section = &file.config.provider;
    let info = selection.info;
    let model = flags
        .model
        .clone()
        .or_else(|| set("OXYDRA_MODEL"))
        .or_else(|| section.model.clone())
        .unwrap_or_else(|| info.default_model.to_owned());
    let (api, reasoning_effort) = openai_settings(file, flags, info)?;
    let thinking_budget = thinking_budget(file, flags, info)?;
    Ok(EffectiveProvider {
        kind: ProviderKind::Http(info),
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
        hf_endpoint: None,
        fallback: Vec::new(),
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

/// The local model `model` with the file's settings, and the endpoint an `hf:` name
/// is downloaded from (`HF_ENDPOINT`, read here with the rest of the environment).
fn local_provider(
    section: &ProviderSection,
    model: String,
    env: EnvLookup<'_>,
) -> EffectiveProvider {
    #[cfg(feature = "local")]
    let hf_endpoint = env(oxydra::local::HF_ENDPOINT_VAR).filter(|value| !value.trim().is_empty());
    #[cfg(not(feature = "local"))]
    let hf_endpoint = {
        let _unused = env;
        None
    };
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
        hf_endpoint,
        fallback: Vec::new(),
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
        hf_endpoint: None,
        fallback: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    use crate::config::test_file as file;

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
    fn api_key_env_names_the_variable_the_key_is_sent_from() {
        let env = |name: &str| (name == "MY_GATEWAY_KEY").then(|| "gw-secret".to_owned());
        let flags = RunOptions {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key_env: Some("MY_GATEWAY_KEY".into()),
            ..RunOptions::default()
        };
        let picked = merge_provider(&file(""), &flags, &env, KeyNeed::Required).unwrap();
        assert_eq!(picked.api_key_env.as_deref(), Some("MY_GATEWAY_KEY"));
        assert_eq!(
            picked
                .api_key
                .as_ref()
                .map(|key| key.expose().to_owned())
                .as_deref(),
            Some("gw-secret")
        );
        // Unset: the error names the variable and the flag that named it.
        let unset = RunOptions {
            api_key_env: Some("NOT_SET_ANYWHERE".into()),
            ..flags.clone()
        };
        let error = merge_provider(&file(""), &unset, &env, KeyNeed::Required).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("NOT_SET_ANYWHERE") && text.contains("--api-key-env"),
            "{text}"
        );
        // A value or a `$` where the name belongs is refused, never echoed.
        for bad in ["$MY_GATEWAY_KEY", "sk-proj-abc123 ", "1KEY", "", "A-B"] {
            let flags = RunOptions {
                api_key_env: Some(bad.into()),
                ..flags.clone()
            };
            let error = merge_provider(&file(""), &flags, &env, KeyNeed::Required).unwrap_err();
            assert!(
                matches!(
                    error,
                    CliError::Flag {
                        flag: "--api-key-env",
                        ..
                    }
                ),
                "{bad}: {error}"
            );
            assert!(
                bad.trim().is_empty() || !error.to_string().contains(bad.trim()),
                "{error}"
            );
        }
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
