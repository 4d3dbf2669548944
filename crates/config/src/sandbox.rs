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

/// A variable named as holding a provider's key, and what names it (for the error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyVariable<'a> {
    /// The variable.
    pub name: &'a str,
    /// What names it: `provider.api_key_env`, `provider.fallback[1].api_key_env`,
    /// `--api-key-env`.
    pub named_by: String,
}

/// A `pass_env` name that holds a provider's key: the name, and what makes it one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassedKey<'a> {
    /// The name in `pass_env`.
    pub name: &'a str,
    /// What names it as a key: a [`KeyVariable::named_by`], or `the openai provider's
    /// own variable`.
    pub named_by: String,
}

/// The variables `provider` names as holding keys: `[provider] api_key_env` and each
/// `[[provider.fallback]]` table's `api_key_env` (a table without one uses its kind's
/// own variable, which [`provider_key_passed`] knows anyway).
pub fn key_variables(provider: &crate::ProviderSection) -> Vec<KeyVariable<'_>> {
    let main = provider.api_key_env.as_deref().map(|name| KeyVariable {
        name,
        named_by: "provider.api_key_env".to_owned(),
    });
    let fallbacks = provider
        .fallback
        .iter()
        .enumerate()
        .filter_map(|(index, fallback)| {
            Some(KeyVariable {
                name: fallback.api_key_env.as_deref()?,
                named_by: format!("provider.fallback[{index}].api_key_env"),
            })
        });
    main.into_iter().chain(fallbacks).collect()
}

/// The first name of `pass_env` that holds a provider's key: one of `configured` (the
/// configuration's and the flags' key variables, see [`key_variables`]) or any
/// provider kind's own variable (`OPENAI_API_KEY` …).
pub fn provider_key_passed<'a>(
    pass_env: &'a [String],
    configured: &[KeyVariable<'_>],
) -> Option<PassedKey<'a>> {
    pass_env.iter().map(String::as_str).find_map(|name| {
        let named_by = configured
            .iter()
            .find(|variable| variable.name == name)
            .map(|variable| variable.named_by.clone())
            .or_else(|| {
                oxydra::provider::PROVIDERS
                    .iter()
                    .find(|kind| kind.api_key_var == name)
                    .map(|kind| format!("the {} provider's own variable", kind.name))
            })?;
        Some(PassedKey { name, named_by })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    fn named(name: &'static str, by: &str) -> KeyVariable<'static> {
        KeyVariable {
            name,
            named_by: by.to_owned(),
        }
    }

    #[test]
    fn a_provider_key_is_never_passed_to_commands() {
        let pass_env = names(&["CARGO_HOME", "OPENAI_API_KEY"]);
        let passed = provider_key_passed(&pass_env, &[]).unwrap();
        assert_eq!(passed.name, "OPENAI_API_KEY");
        assert_eq!(passed.named_by, "the openai provider's own variable");
        let configured = [named("MY_KEY", "provider.api_key_env")];
        let pass_env = names(&["MY_KEY"]);
        let passed = provider_key_passed(&pass_env, &configured).unwrap();
        assert_eq!(
            (passed.name, passed.named_by.as_str()),
            ("MY_KEY", "provider.api_key_env")
        );
        assert_eq!(
            provider_key_passed(&names(&["CARGO_HOME"]), &configured),
            None
        );
        assert_eq!(provider_key_passed(&[], &configured), None);
    }

    #[test]
    fn every_fallback_table_and_the_flag_name_key_variables() {
        let config: crate::FileConfig = toml::from_str(
            r#"
[provider]
kind = "openai"
api_key_env = "MAIN_KEY"

[[provider.fallback]]
kind = "anthropic"
model = "claude"

[[provider.fallback]]
kind = "openai"
model = "backup"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "BACKUP_KEY"
"#,
        )
        .unwrap();
        let mut configured = key_variables(&config.provider);
        assert_eq!(
            configured,
            [
                named("MAIN_KEY", "provider.api_key_env"),
                named("BACKUP_KEY", "provider.fallback[1].api_key_env"),
            ]
        );
        let pass_env = names(&["PATH", "BACKUP_KEY"]);
        let passed = provider_key_passed(&pass_env, &configured).unwrap();
        assert_eq!(passed.name, "BACKUP_KEY");
        assert_eq!(passed.named_by, "provider.fallback[1].api_key_env");
        // The fallback without a variable of its own uses its kind's.
        let pass_env = names(&["ANTHROPIC_API_KEY"]);
        let passed = provider_key_passed(&pass_env, &configured).unwrap();
        assert_eq!(passed.named_by, "the anthropic provider's own variable");
        // The flag's variable counts as one.
        assert_eq!(
            provider_key_passed(&names(&["FLAG_KEY"]), &configured),
            None
        );
        configured.push(named("FLAG_KEY", "--api-key-env"));
        let pass_env = names(&["FLAG_KEY"]);
        let passed = provider_key_passed(&pass_env, &configured).unwrap();
        assert_eq!(passed.named_by, "--api-key-env");
        // A name that merely looks like one is not refused.
        assert_eq!(
            provider_key_passed(&names(&["BACKUP_KEY_PATH", "main_key"]), &configured),
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
