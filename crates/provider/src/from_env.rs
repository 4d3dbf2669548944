//! A provider from its kind's name and the environment, in one call.
//!
//! Each kind reads its key and base URL variables from its row of
//! [`PROVIDERS`](crate::PROVIDERS) (e.g. `OPENAI_API_KEY`, `OPENAI_BASE_URL`).

use std::sync::Arc;

use crate::config::ProviderConfig;
use crate::error::ProviderError;
use crate::kinds::{PROVIDER_KINDS, ProviderInfo, provider_info};
use crate::provider::Provider;

/// The provider of kind `kind` (see [`PROVIDER_KINDS`]), configured from the process
/// environment. Not wrapped in retries: `AgentRuntime::builder()` does that.
///
/// # Errors
/// [`ProviderError::InvalidConfig`] when the kind is unknown, or when the API key is
/// unset while the base URL is the vendor's own (a server of one's own at
/// `<KIND>_BASE_URL` may need no key).
pub fn from_env(kind: &str) -> Result<Arc<dyn Provider>, ProviderError> {
    from_env_with(kind, |name| std::env::var(name).ok())
}

/// [`from_env`] reading variables through `env` instead of the process environment.
///
/// # Errors
/// As [`from_env`].
pub fn from_env_with(
    kind: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let kind = kind.trim().to_ascii_lowercase();
    let Some(info) = provider_info(&kind) else {
        return Err(ProviderError::InvalidConfig {
            what: "provider kind".into(),
            message: format!("`{kind}` is not one of {}", PROVIDER_KINDS.join(", ")),
        });
    };
    let config = config_from_env(info, &env)?;
    Ok((info.build)(config))
}

/// The kind's key and base URL variables (the base URL defaulting to the vendor's);
/// empty values count as unset. A keyless kind (a local server) needs neither.
fn config_from_env(
    info: &ProviderInfo,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ProviderError> {
    let read = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let (key_var, base_var) = (info.api_key_var, info.base_url_var);
    let api_key = read(key_var);
    let base_url = read(base_var);
    if api_key.is_none() && base_url.is_none() && !info.keyless {
        return Err(ProviderError::InvalidConfig {
            what: key_var.to_owned(),
            message: format!(
                "{key_var} is not set (set it, or {base_var} to a server that needs no key)"
            ),
        });
    }
    let base_url = base_url.unwrap_or_else(|| info.default_base_url.to_owned());
    Ok(ProviderConfig::new(base_url, api_key).with_api_key_source(key_var))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn each_kind_reads_its_own_variables() {
        let openai = from_env_with("OpenAI", env(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
        assert_eq!(openai.name(), "openai");
        let anthropic = from_env_with(
            "anthropic",
            env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")]),
        )
        .unwrap();
        assert_eq!(anthropic.name(), "anthropic");
        let gemini = from_env_with("gemini", env(&[("GEMINI_API_KEY", "g-1")])).unwrap();
        assert_eq!(gemini.name(), "gemini");
        // Ollama is a local server: no key and no base URL are needed.
        let ollama = from_env_with("ollama", env(&[])).unwrap();
        assert_eq!(ollama.name(), "ollama");
        assert!(from_env_with("gemini", env(&[])).is_err());
    }

    #[test]
    fn a_missing_key_or_an_unknown_kind_is_named() {
        let error = from_env_with("openai", env(&[("OPENAI_API_KEY", " ")]))
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("OPENAI_API_KEY is not set"),
            "{error}"
        );
        let error = from_env_with("mistral", env(&[])).err().unwrap();
        assert!(error.to_string().contains("`mistral`"), "{error}");
        assert!(error.to_string().contains("openai, anthropic"), "{error}");
    }
}
