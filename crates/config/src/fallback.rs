//! `[[provider.fallback]]`: the models that take a turn the one before them failed
//! after its retries, each with its own kind, base URL and key variable, and the
//! checks of each table (their errors name `provider.fallback[N].KEY`, from 0).

use oxydra::provider::ProviderInfo;
use serde::{Deserialize, Serialize};

use crate::values::{Effort, OpenAiApi, ProviderKind};

/// One `[[provider.fallback]]` table: the keys of `[provider]` that say where a
/// request goes and how (no local model: a fallback is an HTTP API).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackSection {
    /// `openai`, `anthropic`, `gemini`, `ollama` … (required; not `local`).
    pub kind: Option<ProviderKind>,
    /// The model to ask (required).
    pub model: Option<String>,
    /// Base URL of the API; absent: the kind's public API.
    pub base_url: Option<String>,
    /// Environment variable holding its API key; absent: the kind's standard variable
    /// (with a `base_url`: no auth header).
    pub api_key_env: Option<String>,
    /// As `[provider] max_response_bytes`.
    pub max_response_bytes: Option<usize>,
    /// As `[provider] first_byte_timeout_secs`.
    pub first_byte_timeout_secs: Option<u64>,
    /// As `[provider] api` (kind `openai` only).
    pub api: Option<OpenAiApi>,
    /// As `[provider] reasoning_effort` (kinds that take one).
    pub reasoning_effort: Option<Effort>,
    /// As `[provider] thinking_budget` (kinds that take one).
    pub thinking_budget: Option<u32>,
}

impl FallbackSection {
    /// The HTTP kind of a checked table (`None` only for a table the parser refuses).
    pub fn info(&self) -> Option<&'static ProviderInfo> {
        self.kind.and_then(ProviderKind::http)
    }
}

/// How a URL is checked (the parser's `http_url`).
pub(crate) type UrlCheck = fn(&str) -> Result<&str, String>;

/// Checks each table, URLs with `http_url`: the key (`provider.fallback[1].model`) and
/// what is wrong.
pub(crate) fn validate(
    fallbacks: &[FallbackSection],
    http_url: UrlCheck,
) -> Result<(), (String, String)> {
    for (index, fallback) in fallbacks.iter().enumerate() {
        check(fallback, http_url)
            .map_err(|(key, message)| (format!("provider.fallback[{index}].{key}"), message))?;
    }
    Ok(())
}

fn check(fallback: &FallbackSection, http_url: UrlCheck) -> Result<(), (&'static str, String)> {
    let info = match fallback.kind {
        None => {
            return Err((
                "kind",
                format!("missing: a fallback names its kind ({})", http_kinds()),
            ));
        }
        Some(ProviderKind::Local) => {
            return Err((
                "kind",
                format!(
                    "a fallback is an HTTP API ({}); the local model cannot be one",
                    http_kinds()
                ),
            ));
        }
        Some(ProviderKind::Http(info)) => info,
    };
    if fallback
        .model
        .as_deref()
        .is_none_or(|model| model.trim().is_empty())
    {
        return Err((
            "model",
            format!(
                "missing: a fallback names the model to ask (for `{}`, e.g. `{}`)",
                info.name, info.default_model
            ),
        ));
    }
    if let Some(url) = &fallback.base_url
        && let Err(message) = http_url(url)
    {
        return Err(("base_url", message));
    }
    if fallback.max_response_bytes == Some(0) {
        return Err(("max_response_bytes", "expected at least 1, found 0".into()));
    }
    if fallback.first_byte_timeout_secs == Some(0) {
        return Err((
            "first_byte_timeout_secs",
            "expected at least 1, found 0".into(),
        ));
    }
    if fallback.api.is_some() && info.build_responses.is_none() {
        return Err((
            "api",
            format!(
                "applies to kind `openai` only; this fallback is `{}`",
                info.name
            ),
        ));
    }
    if fallback.reasoning_effort.is_some() && !info.reasoning_effort {
        return Err((
            "reasoning_effort",
            format!("`{}` takes no reasoning effort", info.name),
        ));
    }
    if let Some(budget) = fallback.thinking_budget {
        match info.min_thinking_budget {
            None => {
                return Err((
                    "thinking_budget",
                    format!("`{}` takes no thinking budget", info.name),
                ));
            }
            Some(least) if budget < least.max(1) => {
                return Err((
                    "thinking_budget",
                    format!(
                        "`{}` needs at least {} tokens, found {budget}",
                        info.name,
                        least.max(1)
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The HTTP kinds, as a message lists them.
fn http_kinds() -> String {
    let names: Vec<String> = ProviderKind::all()
        .iter()
        .filter_map(|kind| kind.http())
        .map(|info| format!("`{}`", info.name))
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::parse;

    fn error(text: &str) -> String {
        parse(Path::new("/x/oxydra.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn fallback_tables_parse_in_order() {
        let config = parse(
            Path::new("/x/oxydra.toml"),
            "[provider]\nkind = \"openai\"\n\
             [[provider.fallback]]\nkind = \"anthropic\"\nmodel = \"claude-3-5-haiku-latest\"\n\
             [[provider.fallback]]\nkind = \"openai\"\nmodel = \"backup\"\n\
             base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"BACKUP_KEY\"\n",
        )
        .unwrap();
        let fallbacks = &config.provider.fallback;
        assert_eq!(fallbacks.len(), 2);
        assert_eq!(
            fallbacks[0].model.as_deref(),
            Some("claude-3-5-haiku-latest")
        );
        assert_eq!(fallbacks[1].api_key_env.as_deref(), Some("BACKUP_KEY"));
    }

    #[test]
    fn each_bad_table_is_named_by_its_index_and_key() {
        let first = "[[provider.fallback]]\nkind = \"openai\"\nmodel = \"m\"\n";
        let cases = [
            (
                "[[provider.fallback]]\nkind = \"openai\"\n",
                "provider.fallback[1].model",
            ),
            (
                "[[provider.fallback]]\nkind = \"openai\"\nmodel = \" \"\n",
                "provider.fallback[1].model",
            ),
            (
                "[[provider.fallback]]\nmodel = \"m\"\n",
                "provider.fallback[1].kind",
            ),
            (
                "[[provider.fallback]]\nkind = \"local\"\nmodel = \"m.gguf\"\n",
                "provider.fallback[1].kind",
            ),
            (
                "[[provider.fallback]]\nkind = \"gpt\"\nmodel = \"m\"\n",
                "provider.fallback[1].kind",
            ),
            (
                "[[provider.fallback]]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost\"\n",
                "provider.fallback[1].base_url",
            ),
            (
                "[[provider.fallback]]\nkind = \"anthropic\"\nmodel = \"m\"\napi = \"responses\"\n",
                "provider.fallback[1].api",
            ),
            (
                "[[provider.fallback]]\nkind = \"anthropic\"\nmodel = \"m\"\nthinking_budget = 10\n",
                "provider.fallback[1].thinking_budget",
            ),
            (
                "[[provider.fallback]]\nkind = \"openai\"\nmodel = \"m\"\nmax_response_bytes = 0\n",
                "provider.fallback[1].max_response_bytes",
            ),
            (
                "[[provider.fallback]]\nkind = \"openai\"\nmodel = \"m\"\nkey_env = \"X\"\n",
                "key_env",
            ),
        ];
        for (second, key) in cases {
            let message = error(&format!("{first}{second}"));
            assert!(message.contains(key), "{second}: {message}");
        }
    }
}
