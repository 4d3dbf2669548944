//! The kinds of HTTP provider, as data: one row per kind in [`PROVIDERS`].
//!
//! Everything that names a kind reads this table: [`from_env`](crate::from_env), the
//! `oxydra` CLI (its `--provider` values, the order it picks a provider by the API key
//! set, its messages and `oxydra init`) and the list in docs/provider.md. A new HTTP
//! client is its module plus one row here (plus its prices in `pricing.rs`).

use std::sync::Arc;

use crate::anthropic::{ANTHROPIC_BASE_URL, ANTHROPIC_MIN_THINKING_BUDGET, AnthropicProvider};
use crate::config::ProviderConfig;
use crate::gemini::{GEMINI_BASE_URL, GeminiProvider};
use crate::ollama::{OLLAMA_BASE_URL, OllamaProvider};
use crate::openai::{OPENAI_BASE_URL, OpenAiProvider};
use crate::provider::Provider;
use crate::responses::OpenAiResponsesProvider;

/// What one kind of HTTP provider is: its name, the variables it reads, its defaults
/// and how its client is built.
#[derive(Debug, Clone, Copy)]
pub struct ProviderInfo {
    /// The name in configuration, flags and `from_env` (`openai`).
    pub name: &'static str,
    /// The name as a sentence writes it (`OpenAI`).
    pub display_name: &'static str,
    /// One line saying what it speaks, for help texts and docs.
    pub summary: &'static str,
    /// The variable holding its API key (`OPENAI_API_KEY`).
    pub api_key_var: &'static str,
    /// How its keys start, for examples in messages (`sk-`; empty: no telling).
    pub key_prefix: &'static str,
    /// The variable overriding its base URL (`OPENAI_BASE_URL`).
    pub base_url_var: &'static str,
    /// The vendor's own base URL.
    pub default_base_url: &'static str,
    /// The model used when none is named.
    pub default_model: &'static str,
    /// A server of one's own that needs no key (Ollama). Keyless kinds are never
    /// picked by a key being set, nor offered as a public API.
    pub keyless: bool,
    /// The least thinking budget the kind accepts; `None`: it takes none (its models
    /// take a reasoning effort instead, see [`ProviderInfo::reasoning_effort`]).
    pub min_thinking_budget: Option<u32>,
    /// Whether it takes a reasoning effort (`ProviderConfig::with_reasoning_effort`).
    pub reasoning_effort: bool,
    /// Builds its client.
    pub build: fn(ProviderConfig) -> Arc<dyn Provider>,
    /// Builds its client for the Responses API, when the kind speaks one too.
    pub build_responses: Option<fn(ProviderConfig) -> Arc<dyn Provider>>,
}

impl PartialEq for ProviderInfo {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ProviderInfo {}

/// Every kind of HTTP provider, in the order they are listed and, for those with a
/// key, tried when nothing names one (the first whose key variable is set).
pub static PROVIDERS: [ProviderInfo; 4] = TABLE;

const TABLE: [ProviderInfo; 4] = [
    ProviderInfo {
        name: "openai",
        display_name: "OpenAI",
        summary: "OpenAI chat completions or Responses (also vLLM, OpenRouter, llama.cpp, LM Studio)",
        api_key_var: "OPENAI_API_KEY",
        key_prefix: "sk-",
        base_url_var: "OPENAI_BASE_URL",
        default_base_url: OPENAI_BASE_URL,
        default_model: "gpt-4o-mini",
        keyless: false,
        min_thinking_budget: None,
        reasoning_effort: true,
        build: |config| Arc::new(OpenAiProvider::new(config)),
        build_responses: Some(|config| Arc::new(OpenAiResponsesProvider::new(config))),
    },
    ProviderInfo {
        name: "anthropic",
        display_name: "Anthropic",
        summary: "Anthropic Messages",
        api_key_var: "ANTHROPIC_API_KEY",
        key_prefix: "sk-ant-",
        base_url_var: "ANTHROPIC_BASE_URL",
        default_base_url: ANTHROPIC_BASE_URL,
        default_model: "claude-sonnet-4-5",
        keyless: false,
        min_thinking_budget: Some(ANTHROPIC_MIN_THINKING_BUDGET),
        reasoning_effort: false,
        build: |config| Arc::new(AnthropicProvider::new(config)),
        build_responses: None,
    },
    ProviderInfo {
        name: "gemini",
        display_name: "Gemini",
        summary: "Google's Gemini API (`generateContent`)",
        api_key_var: "GEMINI_API_KEY",
        key_prefix: "AIza",
        base_url_var: "GEMINI_BASE_URL",
        default_base_url: GEMINI_BASE_URL,
        default_model: "gemini-2.5-flash",
        keyless: false,
        min_thinking_budget: Some(1),
        reasoning_effort: false,
        build: |config| Arc::new(GeminiProvider::new(config)),
        build_responses: None,
    },
    ProviderInfo {
        name: "ollama",
        display_name: "Ollama",
        summary: "Ollama's native API (`/api/chat`, no key)",
        api_key_var: "OLLAMA_API_KEY",
        key_prefix: "",
        base_url_var: "OLLAMA_BASE_URL",
        default_base_url: OLLAMA_BASE_URL,
        default_model: "llama3.2",
        keyless: true,
        min_thinking_budget: Some(1),
        reasoning_effort: false,
        build: |config| Arc::new(OllamaProvider::new(config)),
        build_responses: None,
    },
];

/// The names of [`PROVIDERS`], in order.
pub const PROVIDER_KINDS: &[&str] = &names(&TABLE);

/// The row of the kind `name` (exact, lower case).
pub fn provider_info(name: &str) -> Option<&'static ProviderInfo> {
    PROVIDERS.iter().find(|info| info.name == name)
}

const fn names<const N: usize>(table: &[ProviderInfo; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut index = 0;
    while index < N {
        // Bounded by `N`, the length of both arrays: checked at compile time.
        #[allow(clippy::indexing_slicing)]
        {
            out[index] = table[index].name;
        }
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_lower_case_and_listed_in_order() {
        assert_eq!(PROVIDER_KINDS, ["openai", "anthropic", "gemini", "ollama"]);
        for (index, info) in PROVIDERS.iter().enumerate() {
            assert_eq!(info.name, info.name.to_ascii_lowercase());
            assert_eq!(
                provider_info(info.name).map(|found| found.name),
                Some(info.name)
            );
            assert!(
                PROVIDERS[..index]
                    .iter()
                    .all(|other| other.name != info.name)
            );
            assert!(
                info.api_key_var.ends_with("_API_KEY"),
                "{}",
                info.api_key_var
            );
            assert!(
                info.base_url_var.ends_with("_BASE_URL"),
                "{}",
                info.base_url_var
            );
        }
        assert!(provider_info("OpenAI").is_none());
    }

    #[test]
    fn the_docs_list_every_kind_with_its_defaults() {
        let docs = include_str!("../../../docs/provider.md");
        for info in &PROVIDERS {
            let row = docs
                .lines()
                .find(|line| line.starts_with(&format!("| `{}` |", info.name)))
                .unwrap_or_else(|| panic!("docs/provider.md lists no `{}`", info.name));
            for fact in [info.api_key_var, info.default_base_url, info.default_model] {
                assert!(row.contains(fact), "{row} lacks {fact}");
            }
        }
    }

    #[test]
    fn each_row_builds_its_own_client() {
        for info in &PROVIDERS {
            let client = (info.build)(ProviderConfig::new(info.default_base_url, None));
            assert_eq!(client.name(), info.name);
        }
        let responses = PROVIDERS
            .iter()
            .find_map(|info| info.build_responses)
            .map(|build| build(ProviderConfig::new(OPENAI_BASE_URL, None)));
        assert!(responses.is_some());
    }
}
