//! Keeping secrets out of printed configuration and logs.

use std::fmt;

use oxydra::mcp::McpServerConfig;
use oxydra::scrubbing::scrub;
use serde::{Serialize, Serializer};

/// A secret value (an API key): prints and serialises masked.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The real value, for the one place that needs it (the provider client).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&mask_secret(&self.0))
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&mask_secret(&self.0))
    }
}

/// Masks a secret: long values keep their first three and last four characters (enough
/// to tell keys apart), short ones are hidden entirely.
pub fn mask_secret(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 16 {
        return "****".to_owned();
    }
    let head: String = chars.iter().take(3).collect();
    let tail: String = chars.iter().skip(chars.len() - 4).collect();
    format!("{head}****{tail}")
}

/// Masks the password of a URL's user info (`https://user:pw@host` → `https://user:****@host`).
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = user_info
        .split_once(':')
        .map_or(user_info, |(user, _)| user);
    format!("{scheme}://{user}:****@{host}{path}")
}

/// `server` as it may be shown (`--print-config`, `mcp list`): the values of `env` and
/// `headers` masked, each argument scrubbed (read with the one before it, so that the
/// value of `--api-key VALUE` is caught as well as `--api-key=VALUE`), and the URL's
/// password masked and its query scrubbed.
pub fn masked_mcp_server(server: &McpServerConfig) -> McpServerConfig {
    let mut shown = server.clone();
    for value in shown.env.values_mut() {
        *value = mask_secret(value);
    }
    for value in shown.headers.0.values_mut() {
        *value = mask_secret(value);
    }
    shown.args = masked_args(&server.args);
    if let Some(url) = &server.url {
        shown.url = Some(scrub(&mask_url(url)).text.into_owned());
    }
    shown
}

/// `args` with every secret the scrubber finds redacted. Each argument is scrubbed
/// alone and after the argument before it (`--token` `VALUE`): a flag's value is
/// often a separate argument, and a separate argument says nothing of itself.
pub fn masked_args(args: &[String]) -> Vec<String> {
    let mut shown = Vec::with_capacity(args.len());
    let mut previous: Option<&str> = None;
    for arg in args {
        let alone = scrub(arg).text.into_owned();
        let after_flag = previous.and_then(|flag| {
            let pair = format!("{flag} {arg}");
            let scrubbed = scrub(&pair).text.into_owned();
            scrubbed
                .strip_prefix(flag)
                .and_then(|rest| rest.strip_prefix(' '))
                .map(str::to_owned)
        });
        shown.push(match after_flag {
            Some(value) if value != *arg && alone == *arg => value,
            _ => alone,
        });
        previous = Some(arg);
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_in_full() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456";
        assert_eq!(mask_secret(key), "sk-****3456");
        assert_eq!(mask_secret("short"), "****");
        let secret = Secret::new(key);
        assert!(!format!("{secret:?}").contains("abcdefgh"));
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"sk-****3456\"");
        assert_eq!(secret.expose(), key);
    }

    #[test]
    fn mcp_server_secrets_are_masked_in_args_env_headers_and_url() {
        let key = "sk-live-4f9KqT2xVb7LmN3pR8sW1zY6";
        let mut server: McpServerConfig = toml::from_str(&format!(
            "name = \"s\"\ncommand = \"srv\"\n\
             args = [\"--api-key={key}\", \"--token\", \"{key}\", \"--port\", \"8080\", \"stdio\"]\n\
             env = {{ API_TOKEN = \"{key}\" }}\n"
        ))
        .unwrap();
        let shown = masked_mcp_server(&server);
        let text = format!("{:?} {}", shown, shown.describe_transport());
        assert!(!text.contains("4f9KqT2x"), "{text}");
        assert!(shown.args[0].starts_with("--api-key="), "{:?}", shown.args);
        assert_eq!(shown.args[1], "--token");
        assert_eq!(&shown.args[3..], ["--port", "8080", "stdio"]);
        server.command = None;
        server.args.clear();
        server.url = Some(format!("https://me:{key}@host/mcp?api_key={key}"));
        server.headers.0.insert("X-Api-Key".into(), key.to_owned());
        let shown = masked_mcp_server(&server);
        let text = format!("{:?} {}", shown.headers.0, shown.describe_transport());
        assert!(!text.contains("4f9KqT2x"), "{text}");
        assert!(text.contains("https://me:****@host/mcp"), "{text}");
    }

    #[test]
    fn url_passwords_are_masked() {
        assert_eq!(
            mask_url("https://me:hunter2@host:8080/v1"),
            "https://me:****@host:8080/v1"
        );
        assert_eq!(
            mask_url("http://localhost:11434/v1"),
            "http://localhost:11434/v1"
        );
    }
}
