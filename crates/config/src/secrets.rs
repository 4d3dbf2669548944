//! `[secrets.NAME]`: secrets the model may name but never holds (DESIGN.md §3.13).
//! Each says where its value comes from (exactly one of `env`, `file`, `command`),
//! which tools may use it and, for a tool that takes a `url`, to which hosts it may be
//! sent. A trusted file only: an untrusted project file's `[secrets]` is withheld like
//! every key that grants power (see [`super::powers`]). The value is read by the
//! program that runs (the CLI's configuration step), never here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The secrets by name.
pub type Secrets = BTreeMap<String, SecretConfig>;

/// One `[secrets.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    /// The environment variable holding the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// A file holding the value (relative to the configuration file's directory);
    /// a final line break is not part of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// A program and its arguments (no shell) whose standard output is the value (a
    /// password manager's `get`), run once when the configuration is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The tools whose calls may use `{{secret:NAME}}`.
    #[serde(default)]
    pub tools: Vec<String>,
    /// When not empty: the only hosts a call's `url` may name for the secret to be put
    /// in (`web_fetch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// What is wrong with the secret `name`, if anything: its name, its one source, its
/// tools.
pub fn check_secret(name: &str, secret: &SecretConfig) -> Result<(), String> {
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'));
    if !name_ok {
        return Err(format!(
            "a secret's name is ASCII letters, digits, `_` and `-` (the model writes {{{{secret:NAME}}}}), found `{name}`"
        ));
    }
    let sources = usize::from(secret.env.is_some())
        + usize::from(secret.file.is_some())
        + usize::from(secret.command.is_some());
    if sources != 1 {
        return Err("give exactly one of `env`, `file` or `command`".to_owned());
    }
    if secret.command.as_ref().is_some_and(Vec::is_empty) {
        return Err("`command` names a program and its arguments; it is empty".to_owned());
    }
    if secret.tools.is_empty() {
        return Err("`tools` names the tools that may use it; no tool may use it now".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> SecretConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn one_source_tools_and_a_plain_name_are_required() {
        let good = secret("env = \"GH_TOKEN\"\ntools = [\"shell_exec\"]");
        assert_eq!(check_secret("GH_TOKEN", &good), Ok(()));
        for (name, text, expected) in [
            ("GH", "tools = [\"shell_exec\"]", "exactly one"),
            (
                "GH",
                "env = \"A\"\nfile = \"b\"\ntools = [\"x\"]",
                "exactly one",
            ),
            ("GH", "command = []\ntools = [\"x\"]", "empty"),
            ("GH", "env = \"A\"", "no tool may use it"),
            ("G H}}", "env = \"A\"\ntools = [\"x\"]", "letters, digits"),
        ] {
            let error = check_secret(name, &secret(text)).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
        assert!(toml::from_str::<SecretConfig>("value = \"inline\"\ntools = [\"x\"]").is_err());
    }
}
