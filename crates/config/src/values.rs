//! Values the flags and the configuration file share: the provider kind, the OpenAI
//! API and reasoning effort, and how consent is answered. With the `clap` feature they
//! are `clap::ValueEnum`s, so a command line takes the same words as the file.

use std::sync::LazyLock;

use oxydra::provider::{PROVIDERS, ProviderInfo};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The provider a run talks to: one of the HTTP kinds of the provider crate's table
/// ([`PROVIDERS`]), or the model run in-process, which only the CLI knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// An HTTP API: its row of the table.
    Http(&'static ProviderInfo),
    /// A GGUF model run in-process (llama.cpp).
    Local,
}

/// Every kind: the table's, in order, then `local`.
static ALL: LazyLock<Vec<ProviderKind>> = LazyLock::new(|| {
    PROVIDERS
        .iter()
        .map(ProviderKind::Http)
        .chain([ProviderKind::Local])
        .collect()
});

/// The names of [`ALL`].
static NAMES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| ALL.iter().map(|kind| kind.as_str()).collect());

impl ProviderKind {
    /// The name used in configuration files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http(info) => info.name,
            Self::Local => "local",
        }
    }

    /// Every kind, in the order they are listed in messages.
    pub fn all() -> &'static [Self] {
        &ALL
    }

    /// Every kind's name, in order.
    pub fn names() -> &'static [&'static str] {
        &NAMES
    }

    /// The names as a message lists them: `` `openai`, `anthropic` … or `local` ``.
    pub fn listed() -> String {
        let quoted: Vec<String> = NAMES.iter().map(|name| format!("`{name}`")).collect();
        match quoted.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        ALL.iter().copied().find(|kind| kind.as_str() == name)
    }

    /// The HTTP kind's row; `None` for the local model.
    pub fn http(self) -> Option<&'static ProviderInfo> {
        match self {
            Self::Http(info) => Some(info),
            Self::Local => None,
        }
    }

    /// What it speaks, on one line.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Http(info) => info.summary,
            Self::Local => "A GGUF model run in-process (llama.cpp)",
        }
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for ProviderKind {
    fn value_variants<'a>() -> &'a [Self] {
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()).help(self.summary()))
    }
}

impl Serialize for ProviderKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProviderKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Self::from_name(&name)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, ProviderKind::names()))
    }
}

/// Which OpenAI API a provider of kind `openai` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum OpenAiApi {
    /// Chat completions (`POST {base_url}/chat/completions`): every OpenAI-compatible server.
    #[default]
    Chat,
    /// The Responses API (`POST {base_url}/responses`): OpenAI, LM Studio.
    Responses,
}

/// How hard an OpenAI reasoning model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`.
    Medium,
    /// `high`.
    High,
}

impl Effort {
    /// The provider's setting.
    pub fn to_provider(self) -> oxydra::provider::ReasoningEffort {
        use oxydra::provider::ReasoningEffort;
        match self {
            Self::Minimal => ReasoningEffort::Minimal,
            Self::Low => ReasoningEffort::Low,
            Self::Medium => ReasoningEffort::Medium,
            Self::High => ReasoningEffort::High,
        }
    }
}

/// How requests for consent are answered: `ask`, `deny` or `allow`.
///
/// The older words `never` (deny) and `always` (allow) are still read, with a note
/// ([`ApproveMode::renamed`]): in codex `never` means "never ask, just run", the
/// opposite of what it meant here, so the words now say what happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ApproveMode {
    /// Ask in the terminal.
    Ask,
    /// Allow every request (a call held by provenance still needs a person).
    #[serde(alias = "always")]
    #[cfg_attr(feature = "clap", value(alias = "always"))]
    Allow,
    /// Deny every request.
    #[serde(alias = "never")]
    #[cfg_attr(feature = "clap", value(alias = "never"))]
    Deny,
}

impl ApproveMode {
    /// The word of this mode (`ask`, `deny`, `allow`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }

    /// The word that replaced the older word `word` (`always` → `allow`, `never` →
    /// `deny`), or `None` when `word` is not an older word.
    pub fn renamed(word: &str) -> Option<&'static str> {
        match word {
            "always" => Some("allow"),
            "never" => Some("deny"),
            _ => None,
        }
    }
}
