//! Which provider an environment selects, in one place: [`select`] decides the kind,
//! base URL and key from what a caller settled and the environment's variables, and
//! [`from_env`] builds a provider of a named kind from them.
//!
//! Each kind reads its key and base URL variables from its row of
//! [`PROVIDERS`] (e.g. `OPENAI_API_KEY`, `OPENAI_BASE_URL`). Nothing here reads the
//! process environment but [`from_env`]; the other functions take the environment as
//! a lookup function, so a caller (or a test) decides what it holds.

use std::fmt;
use std::sync::Arc;

use crate::config::ProviderConfig;
use crate::error::ProviderError;
use crate::kinds::{PROVIDER_KINDS, PROVIDERS, ProviderInfo, provider_info};
use crate::provider::Provider;

/// What a caller settled before the environment is read (by its flags or its
/// configuration file); what is left `None` the environment decides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderChoice {
    /// The kind, when named; `None`: a base URL or key variable below means the first
    /// kind of [`PROVIDERS`] (OpenAI-compatible), else the first keyed kind whose key
    /// variable is set.
    pub kind: Option<&'static ProviderInfo>,
    /// A base URL of one's own; `None`: the kind's vendor. Without
    /// [`api_key_var`](Self::api_key_var), no key is sent to it: a server of one's own
    /// never receives the vendor's key.
    pub base_url: Option<String>,
    /// The variable holding the key, instead of the kind's own.
    pub api_key_var: Option<String>,
}

/// The provider an environment selects: a kind, where it is, and its key.
#[derive(Clone, PartialEq, Eq)]
pub struct Selection {
    /// The kind.
    pub info: &'static ProviderInfo,
    /// The base URL chosen; `None`: the vendor's ([`ProviderInfo::default_base_url`]).
    pub base_url: Option<String>,
    /// The variable the key is read from; `None`: no key, no auth header.
    pub api_key_var: Option<String>,
    /// The key, when [`api_key_var`](Self::api_key_var) is set (and not blank).
    pub api_key: Option<String>,
}

impl fmt::Debug for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selection")
            .field("kind", &self.info.name)
            .field("base_url", &self.base_url)
            .field("api_key_var", &self.api_key_var)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Selection {
    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.info.default_base_url)
    }

    /// The key variable that was named but is unset: the caller decides whether that
    /// is an error (a run) or not (showing the configuration).
    pub fn missing_key(&self) -> Option<&str> {
        self.api_key_var
            .as_deref()
            .filter(|_| self.api_key.is_none())
    }

    /// The client configuration: base URL, key, and the key's variable as its source.
    pub fn config(&self) -> ProviderConfig {
        let config = ProviderConfig::new(self.base_url(), self.api_key.clone());
        match &self.api_key_var {
            Some(var) => config.with_api_key_source(var.clone()),
            None => config,
        }
    }
}

/// The provider `env` selects given `choice`; `None` when nothing does (no kind named,
/// no base URL or key variable, and no keyed kind's key variable set): a caller may
/// then fall back on a model of its own (the `oxydra` CLI's local model).
///
/// The key is read from [`ProviderChoice::api_key_var`], else, unless a base URL was
/// chosen or the kind is keyless, from the kind's own variable. Blank values count as
/// unset.
///
/// ```
/// use oxydra_provider::{ProviderChoice, provider_info, select};
///
/// let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-1".to_owned());
/// // Nothing named: the first keyed kind whose key is set.
/// let picked = select(&ProviderChoice::default(), env).unwrap();
/// assert_eq!(picked.info.name, "anthropic");
/// assert_eq!(picked.api_key.as_deref(), Some("sk-ant-1"));
///
/// // A server of one's own: OpenAI-compatible, and the vendor's key is not sent.
/// let own = ProviderChoice {
///     base_url: Some("http://localhost:8000/v1".into()),
///     ..ProviderChoice::default()
/// };
/// let picked = select(&own, env).unwrap();
/// assert_eq!((picked.info.name, picked.api_key), ("openai", None));
///
/// // A kind named whose key is unset: selected, and the caller sees what is missing.
/// let gemini = ProviderChoice { kind: provider_info("gemini"), ..ProviderChoice::default() };
/// assert_eq!(select(&gemini, env).unwrap().missing_key(), Some("GEMINI_API_KEY"));
/// assert!(select(&ProviderChoice::default(), |_: &str| None).is_none());
/// ```
pub fn select(choice: &ProviderChoice, env: impl Fn(&str) -> Option<String>) -> Option<Selection> {
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let info = match choice.kind {
        Some(info) => info,
        None if choice.base_url.is_some() || choice.api_key_var.is_some() => PROVIDERS.first()?,
        None => PROVIDERS
            .iter()
            .filter(|info| !info.keyless)
            .find(|info| set(info.api_key_var).is_some())?,
    };
    let api_key_var = match &choice.api_key_var {
        Some(var) => Some(var.clone()),
        None if choice.base_url.is_some() || info.keyless => None,
        None => Some(info.api_key_var.to_owned()),
    };
    let api_key = api_key_var.as_deref().and_then(set);
    Some(Selection {
        info,
        base_url: choice.base_url.clone(),
        api_key_var,
        api_key,
    })
}

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
/// ```
/// let env = |name: &str| (name == "OLLAMA_BASE_URL").then(|| "http://gpu:11434".to_owned());
/// let ollama = oxydra_provider::from_env_with("ollama", env)?;
/// assert_eq!(ollama.name(), "ollama");
/// assert!(oxydra_provider::from_env_with("openai", |_: &str| None).is_err());
/// # Ok::<(), oxydra_provider::ProviderError>(())
/// ```
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
    let selection = selection_of_kind(info, &env)?;
    Ok((info.build)(selection.config()))
}

/// The kind's key and base URL variables (the base URL defaulting to the vendor's),
/// the key sent to `<KIND>_BASE_URL` too when set. The key may be missing only for a
/// base URL of one's own or a keyless kind (a local server).
fn selection_of_kind(
    info: &'static ProviderInfo,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Selection, ProviderError> {
    let base_url = env(info.base_url_var).filter(|value| !value.trim().is_empty());
    let choice = ProviderChoice {
        kind: Some(info),
        base_url,
        api_key_var: Some(info.api_key_var.to_owned()),
    };
    let selection = select(&choice, env).ok_or_else(|| ProviderError::InvalidConfig {
        what: "provider kind".into(),
        message: format!("`{}` selected nothing", info.name),
    })?;
    match selection.missing_key() {
        Some(key_var) if choice.base_url.is_none() && !info.keyless => {
            let base_var = info.base_url_var;
            Err(ProviderError::InvalidConfig {
                what: key_var.to_owned(),
                message: format!(
                    "{key_var} is not set (set it, or {base_var} to a server that needs no key)"
                ),
            })
        }
        _ => Ok(selection),
    }
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
    fn nothing_named_takes_the_first_keyed_kind_whose_key_is_set() {
        let both = env(&[("ANTHROPIC_API_KEY", "a"), ("GEMINI_API_KEY", "g")]);
        let picked = select(&ProviderChoice::default(), &both).unwrap();
        assert_eq!(picked.info.name, "anthropic");
        assert_eq!(picked.api_key_var.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(picked.base_url(), picked.info.default_base_url);
        let openai = env(&[("OPENAI_API_KEY", "o"), ("ANTHROPIC_API_KEY", "a")]);
        assert_eq!(
            select(&ProviderChoice::default(), &openai)
                .unwrap()
                .info
                .name,
            "openai"
        );
        // Ollama needs no key, so no key picks it; blank keys count as unset.
        assert!(select(&ProviderChoice::default(), env(&[("OLLAMA_API_KEY", "x")])).is_none());
        assert!(select(&ProviderChoice::default(), env(&[("OPENAI_API_KEY", " ")])).is_none());
    }

    #[test]
    fn a_base_url_of_ones_own_gets_no_key_unless_a_variable_is_named() {
        let keys = env(&[("OPENAI_API_KEY", "sk-1"), ("MY_KEY", "m-1")]);
        let own = ProviderChoice {
            base_url: Some("http://127.0.0.1:8000/v1".into()),
            ..ProviderChoice::default()
        };
        let picked = select(&own, &keys).unwrap();
        assert_eq!(picked.info.name, "openai");
        assert_eq!((picked.api_key_var, picked.api_key), (None, None));
        let named = ProviderChoice {
            api_key_var: Some("MY_KEY".into()),
            ..own
        };
        let picked = select(&named, &keys).unwrap();
        assert_eq!(picked.api_key.as_deref(), Some("m-1"));
        assert_eq!(picked.config().api_key_source.as_deref(), Some("MY_KEY"));
        let unset = ProviderChoice {
            api_key_var: Some("UNSET_KEY".into()),
            ..ProviderChoice::default()
        };
        assert_eq!(
            select(&unset, &keys).unwrap().missing_key(),
            Some("UNSET_KEY")
        );
        assert!(!format!("{:?}", select(&named, &keys).unwrap()).contains("m-1"));
    }

    #[test]
    fn a_named_kind_is_selected_with_or_without_its_key() {
        let gemini = ProviderChoice {
            kind: provider_info("gemini"),
            ..ProviderChoice::default()
        };
        let picked = select(&gemini, env(&[("OPENAI_API_KEY", "o")])).unwrap();
        assert_eq!(picked.missing_key(), Some("GEMINI_API_KEY"));
        let ollama = ProviderChoice {
            kind: provider_info("ollama"),
            ..ProviderChoice::default()
        };
        assert_eq!(select(&ollama, env(&[])).unwrap().missing_key(), None);
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
