//! The fallback models of a run (`[[provider.fallback]]`): each table's kind, base URL
//! and key variable, with what the environment then selects (its key), as the primary
//! provider's are decided. A key variable that is not set is an error for a run, naming
//! the table's key.

use oxydra::provider::ProviderChoice;
use oxydra_config::{FallbackSection, LoadedFile};

use super::EnvLookup;
use super::mask::{Secret, mask_url};
use super::provider_pick::{EffectiveProvider, KeyNeed};
use crate::args::RunOptions;
use crate::error::CliError;

/// The provider of a run ([`super::provider_pick::merge_provider`]) with the file's
/// fallback models.
pub(super) fn merge_provider(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    need: KeyNeed,
) -> Result<EffectiveProvider, CliError> {
    let mut provider = super::provider_pick::merge_provider(file, flags, env, need)?;
    provider.fallback = merge_fallbacks(file, env, need)?;
    Ok(provider)
}

/// The file's fallback models, in order, each an HTTP provider of its own.
pub(super) fn merge_fallbacks(
    file: &LoadedFile,
    env: EnvLookup<'_>,
    need: KeyNeed,
) -> Result<Vec<EffectiveProvider>, CliError> {
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    file.config
        .provider
        .fallback
        .iter()
        .enumerate()
        .map(|(index, section)| fallback(file, index, section, &set, need))
        .collect()
}

fn fallback(
    file: &LoadedFile,
    index: usize,
    section: &FallbackSection,
    env: EnvLookup<'_>,
    need: KeyNeed,
) -> Result<EffectiveProvider, CliError> {
    let key = |name: &str| {
        let key = format!("provider.fallback[{index}].{name}");
        match &file.path {
            Some(path) => format!("{key} in {}", path.display()),
            None => key,
        }
    };
    // Checked when the file was read: an HTTP kind and a model.
    let (Some(info), Some(model)) = (section.info(), section.model.clone()) else {
        return Err(CliError::Config(oxydra_config::ConfigError::Invalid {
            path: file.path.clone().unwrap_or_default(),
            key: format!("provider.fallback[{index}]"),
            message: "a fallback needs an HTTP kind and a model".to_owned(),
            line: None,
        }));
    };
    let choice = ProviderChoice {
        kind: Some(info),
        base_url: section.base_url.clone(),
        api_key_var: section.api_key_env.clone(),
    };
    let selection =
        oxydra::provider::select(&choice, env).ok_or_else(|| CliError::MissingApiKey {
            var: section
                .api_key_env
                .clone()
                .unwrap_or_else(|| format!("the API key of `{}`", info.name)),
            origin: key("kind"),
            base_url: mask_url(section.base_url.as_deref().unwrap_or(info.default_base_url)),
        })?;
    if let (Some(var), KeyNeed::Required) = (selection.missing_key(), need) {
        let origin = if section.api_key_env.is_some() {
            key("api_key_env")
        } else {
            key("kind")
        };
        return Err(CliError::MissingApiKey {
            var: var.to_owned(),
            origin,
            base_url: mask_url(selection.base_url()),
        });
    }
    Ok(EffectiveProvider {
        kind: oxydra_config::ProviderKind::Http(info),
        base_url: selection.base_url().to_owned(),
        model,
        api_key: selection.api_key.clone().map(Secret::new),
        api_key_env: selection.api_key_var,
        max_response_bytes: section.max_response_bytes,
        first_byte_timeout_secs: section.first_byte_timeout_secs,
        api: section.api,
        reasoning_effort: section.reasoning_effort,
        thinking_budget: section.thinking_budget,
        threads: None,
        sampling: None,
        hf_endpoint: None,
        fallback: Vec::new(),
    })
}

#[cfg(test)]
mod tests {

    use super::*;

    use crate::config::test_file as file;

    const TWO: &str = "[[provider.fallback]]\nkind = \"anthropic\"\nmodel = \"claude-x\"\n\
                       [[provider.fallback]]\nkind = \"openai\"\nmodel = \"backup\"\n\
                       base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"BACKUP_KEY\"\n";

    #[test]
    fn each_fallback_gets_its_own_key() {
        let env = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant".to_owned()),
            "BACKUP_KEY" => Some("sk-backup".to_owned()),
            "OPENAI_API_KEY" => Some("sk-primary".to_owned()),
            _ => None,
        };
        let fallbacks = merge_fallbacks(&file(TWO), &env, KeyNeed::Required).unwrap();
        assert_eq!(fallbacks.len(), 2);
        assert_eq!(fallbacks[0].model, "claude-x");
        assert_eq!(fallbacks[0].api_key.as_ref().unwrap().expose(), "sk-ant");
        assert_eq!(fallbacks[1].base_url, "http://127.0.0.1:9/v1");
        // Its own variable, never the primary's key sent to its server.
        assert_eq!(fallbacks[1].api_key.as_ref().unwrap().expose(), "sk-backup");
        assert_eq!(fallbacks[1].api_key_env.as_deref(), Some("BACKUP_KEY"));
    }

    #[test]
    fn an_unset_key_names_the_table() {
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant".to_owned());
        let error = merge_fallbacks(&file(TWO), &env, KeyNeed::Required).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("BACKUP_KEY") && text.contains("provider.fallback[1].api_key_env"),
            "{text}"
        );
        // Showing the configuration only says it.
        assert!(merge_fallbacks(&file(TWO), &env, KeyNeed::Optional).is_ok());
    }
}
