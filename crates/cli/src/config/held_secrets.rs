//! The secrets this program holds once configured — the provider's key, the keys of
//! the providers `serve`'s blueprints may name, MCP servers' headers, bearer tokens and
//! secret-named environment variables — handed to the runtime by name and value so
//! that they are scrubbed by value, in every encoding a command prints, from all it
//! sends and stores ([`oxydra::runtime::AgentRuntimeBuilder::known_secret`]).

use oxydra::mcp::McpServerConfig;
use oxydra::scrubbing::MIN_KNOWN_SECRET_LEN;

use super::mask::Secret;
use super::{EffectiveProvider, EnvLookup};

/// One held secret: the name a redaction reports, and the value.
pub type HeldSecret = (String, Secret);

/// The key of `provider`, named after its variable (or `provider key`).
pub fn provider_key(provider: &EffectiveProvider) -> Option<HeldSecret> {
    let key = provider.api_key.clone()?;
    let name = provider
        .api_key_env
        .clone()
        .unwrap_or_else(|| "provider key".to_owned());
    Some((name, key))
}

/// The keys of the provider's fallback models (`[[provider.fallback]]`).
pub fn fallback_keys(provider: &EffectiveProvider) -> Vec<HeldSecret> {
    provider.fallback.iter().filter_map(provider_key).collect()
}

/// What the MCP servers are given: every header value, the bearer token read from
/// `bearer_token_env`, and each environment value whose variable the scrubber treats as
/// secret by its name (`GITHUB_TOKEN`, `DB_PASSWORD`: the same judgement the scrubber
/// makes of `NAME=value` in text, so no second list of names is kept here).
pub fn mcp_secrets(servers: &[McpServerConfig], env: EnvLookup<'_>) -> Vec<HeldSecret> {
    let mut held = Vec::new();
    for server in servers {
        for (header, value) in &server.headers.0 {
            held.push((format!("mcp:{}:{header}", server.name), Secret::new(value)));
        }
        if let Some(variable) = &server.bearer_token_env
            && let Some(token) = env(variable)
        {
            held.push((variable.clone(), Secret::new(token)));
        }
        for (variable, value) in &server.env {
            let labelled = format!("{variable}={value}");
            if !oxydra::scrubbing::scrub(&labelled).is_clean() {
                held.push((variable.clone(), Secret::new(value)));
            }
        }
    }
    held
}

/// `held` as the runtime takes it: values too short to be searched without matching
/// ordinary text (a test key, a PIN) are left to the pattern scrubber, once each.
pub fn searchable(held: &[HeldSecret]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in held {
        let value = value.expose();
        if value.len() >= MIN_KNOWN_SECRET_LEN && !out.iter().any(|(_, seen)| seen == value) {
            out.push((name.clone(), value.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn server(toml_text: &str) -> McpServerConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn headers_tokens_and_secret_named_variables_are_held_and_the_rest_not() {
        let servers = [
            server(
                r#"
name = "gh"
command = "gh-mcp"
env = { GITHUB_TOKEN = "ghp_R8mKq2ZtW7vXy4Lp9Nd3", LOG_LEVEL = "debug-verbose", WORKDIR = "/srv/project/data" }
"#,
            ),
            server(
                r#"
name = "remote"
url = "https://mcp.example.com/mcp"
headers = { X-Tenant-Key = "tenant-9f8e7d6c5b4a" }
bearer_token_env = "REMOTE_TOKEN"
"#,
            ),
        ];
        let vars = BTreeMap::from([("REMOTE_TOKEN", "rt-1234567890abcdef")]);
        let lookup = |name: &str| vars.get(name).map(|v| (*v).to_owned());
        let held = mcp_secrets(&servers, &lookup);
        let names: Vec<&str> = held.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["GITHUB_TOKEN", "mcp:remote:X-Tenant-Key", "REMOTE_TOKEN"]
        );
    }

    #[test]
    fn short_and_repeated_values_are_left_out() {
        let held = vec![
            ("A".to_owned(), Secret::new("short")),
            ("B".to_owned(), Secret::new("long-enough-value")),
            ("C".to_owned(), Secret::new("long-enough-value")),
        ];
        assert_eq!(
            searchable(&held),
            [("B".to_owned(), "long-enough-value".to_owned())]
        );
    }
}

/// The `[secrets.NAME]` of the configuration with their values read: the environment
/// variable, the file (relative to `base`, the configuration file's directory; one final
/// line break dropped) or the command's standard output. Errors name the key.
pub fn secret_handles(
    secrets: &oxydra_config::Secrets,
    base: Option<&std::path::Path>,
    env: EnvLookup<'_>,
) -> Result<oxydra::executor::SecretHandles, UnreadSecret> {
    use oxydra::executor::{SecretHandle, SecretHandles};
    let mut handles = SecretHandles::default();
    for (name, secret) in secrets {
        let value = read_value(secret, base, env).map_err(|message| UnreadSecret {
            key: format!("secrets.{name}"),
            message,
        })?;
        handles = handles.with(
            name.clone(),
            SecretHandle::new(value, secret.tools.clone(), secret.hosts.clone()),
        );
    }
    Ok(handles)
}

/// The `[secrets.NAME]` of the loaded configuration `file` with their values read
/// (see [`secret_handles`]); an unreadable one is a configuration error naming its key.
pub fn file_secret_handles(
    file: &oxydra_config::LoadedFile,
    env: EnvLookup<'_>,
) -> Result<oxydra::executor::SecretHandles, crate::error::CliError> {
    secret_handles(
        &file.config.secrets,
        file.path.as_deref().and_then(std::path::Path::parent),
        env,
    )
    .map_err(|unread| {
        crate::error::CliError::Config(oxydra_config::ConfigError::Invalid {
            path: file.path.clone().unwrap_or_default(),
            message: unread.to_string(),
            key: unread.key,
            line: None,
        })
    })
}

/// A `[secrets.NAME]` whose value could not be read: the key and why.
#[derive(Debug)]
pub struct UnreadSecret {
    /// `secrets.NAME`.
    pub key: String,
    /// What went wrong (never the value).
    pub message: String,
}

impl std::fmt::Display for UnreadSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// The value of one secret, from its one source.
fn read_value(
    secret: &oxydra_config::SecretConfig,
    base: Option<&std::path::Path>,
    env: EnvLookup<'_>,
) -> Result<String, String> {
    let value = if let Some(variable) = &secret.env {
        env(variable).ok_or_else(|| format!("the variable {variable} is not set"))?
    } else if let Some(file) = &secret.file {
        let path = base.map_or_else(|| file.clone(), |dir| dir.join(file));
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        text.strip_suffix('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .unwrap_or(&text)
            .to_owned()
    } else if let Some((program, args)) =
        secret.command.as_deref().and_then(<[String]>::split_first)
    {
        let output = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .map_err(|error| format!("cannot run {program}: {error}"))?;
        if !output.status.success() {
            return Err(format!("{program} failed ({})", output.status));
        }
        let text = String::from_utf8(output.stdout)
            .map_err(|_| format!("{program} printed bytes that are not UTF-8"))?;
        text.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        return Err("give one of `env`, `file` or `command`".to_owned());
    };
    if value.is_empty() {
        return Err("the value is empty".to_owned());
    }
    Ok(value)
}

#[cfg(test)]
mod handle_tests {
    use super::*;

    #[test]
    fn values_come_from_the_environment_a_file_or_a_command_and_errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token.txt"), "file-Value-0123456789\n").unwrap();
        let secrets: oxydra_config::Secrets = toml::from_str(
            r#"
[A]
env = "A_VAR"
tools = ["shell_exec"]
[B]
file = "token.txt"
tools = ["shell_exec"]
[C]
command = ["printf", "cmd-Value-0123456789"]
tools = ["web_fetch"]
hosts = ["api.example.com"]
"#,
        )
        .unwrap();
        let lookup = |name: &str| (name == "A_VAR").then(|| "env-Value-0123456789".to_owned());
        let handles = secret_handles(&secrets, Some(dir.path()), &lookup).unwrap();
        let values: Vec<(&str, &str)> = handles.values().collect();
        assert_eq!(
            values,
            [
                ("A", "env-Value-0123456789"),
                ("B", "file-Value-0123456789"),
                ("C", "cmd-Value-0123456789")
            ]
        );
        let none = |_: &str| None;
        let error = secret_handles(&secrets, Some(dir.path()), &none).unwrap_err();
        assert_eq!(error.key, "secrets.A");
        let shown = error.to_string();
        assert!(
            shown.contains("secrets.A") && shown.contains("A_VAR"),
            "{shown}"
        );
        let failing: oxydra_config::Secrets =
            toml::from_str("[D]\ncommand = [\"false\"]\ntools = [\"x\"]").unwrap();
        let error = secret_handles(&failing, None, &none).unwrap_err();
        assert_eq!(error.key, "secrets.D");
        let shown = error.to_string();
        assert!(
            shown.contains("secrets.D") && shown.contains("false"),
            "{shown}"
        );
    }
}
