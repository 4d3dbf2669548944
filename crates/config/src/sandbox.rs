//! `[sandbox]` and `--sandbox`: the command sandbox `shell_exec` and deterministic
//! shell steps run in (docs/security.md, "The sandbox").
//!
//! `full-access` and `network = true` widen what a command may do, so they count only
//! from a trusted file or the flag; an untrusted file may narrow (`read-only`).

use oxydra::tools::{SandboxConfig, SandboxMode};
use serde::{Deserialize, Serialize};

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// `read-only`, `workspace-write` (default) or `full-access`.
    pub mode: Option<SandboxMode>,
    /// Whether commands may use the network (default `false`).
    pub network: Option<bool>,
    /// Environment variables passed to commands beside the allow-list (trusted files
    /// only: a name here hands its value to every command).
    pub pass_env: Option<Vec<String>>,
}

/// The sandbox of a run: `--sandbox` wins over `[sandbox] mode`.
pub fn effective(section: &SandboxSection, flag: Option<SandboxMode>) -> SandboxConfig {
    SandboxConfig {
        mode: flag.or(section.mode).unwrap_or_default(),
        network: section.network.unwrap_or(false),
        pass_env: section.pass_env.clone().unwrap_or_default(),
        ..SandboxConfig::default()
    }
}

/// The first name of `pass_env` that holds a provider's key: the one the configuration
/// names (`[provider] api_key_env`) or any provider kind's own variable
/// (`OPENAI_API_KEY` …).
pub fn provider_key_passed<'a>(
    pass_env: &'a [String],
    configured: Option<&str>,
) -> Option<&'a str> {
    pass_env.iter().map(String::as_str).find(|name| {
        Some(*name) == configured
            || oxydra::provider::PROVIDERS
                .iter()
                .any(|kind| kind.api_key_var == *name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_key_is_never_passed_to_commands() {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            provider_key_passed(&names(&["CARGO_HOME", "OPENAI_API_KEY"]), None),
            Some("OPENAI_API_KEY")
        );
        assert_eq!(
            provider_key_passed(&names(&["MY_KEY"]), Some("MY_KEY")),
            Some("MY_KEY")
        );
        assert_eq!(
            provider_key_passed(&names(&["CARGO_HOME"]), Some("MY_KEY")),
            None
        );
    }

    #[test]
    fn an_untrusted_file_may_only_narrow_the_sandbox() {
        let strip = |section: SandboxSection| {
            let mut table = toml::Table::new();
            table.insert("sandbox".into(), toml::Value::try_from(section).unwrap());
            let (mut kept, ignored) = crate::strip_powers(table);
            let kept = kept
                .remove("sandbox")
                .map(|table| SandboxSection::deserialize(table).unwrap())
                .unwrap_or_default();
            let ignored: Vec<String> = ignored.iter().map(ToString::to_string).collect();
            (ignored, kept)
        };
        let (ignored, kept) = strip(SandboxSection {
            mode: Some(SandboxMode::FullAccess),
            network: Some(true),
            pass_env: Some(vec!["OPENAI_API_KEY".to_owned()]),
        });
        assert_eq!(ignored.len(), 3, "{ignored:?}");
        assert_eq!(kept.pass_env, None);
        assert!(
            ignored.iter().any(|key| key.contains("sandbox.mode")),
            "{ignored:?}"
        );
        assert!(
            ignored.iter().any(|key| key.contains("sandbox.network")),
            "{ignored:?}"
        );
        assert_eq!(kept, SandboxSection::default());
        let narrow = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(false),
            pass_env: None,
        };
        let (ignored, kept) = strip(narrow.clone());
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(effective(&kept, None).mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn the_flag_wins_and_the_default_is_workspace_write_offline() {
        let section = SandboxSection::default();
        let config = effective(&section, None);
        assert_eq!(config.mode, SandboxMode::WorkspaceWrite);
        assert!(!config.network);
        let section = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(true),
            pass_env: None,
        };
        let config = effective(&section, Some(SandboxMode::FullAccess));
        assert_eq!(config.mode, SandboxMode::FullAccess);
        assert!(config.network);
    }
}
