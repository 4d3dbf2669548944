//! The credentials of an HTTP MCP server: its `headers`, and the bearer token read from
//! the variable `bearer_token_env` names when the server is started. The token is held
//! here only; every message that could quote a credential (a failed handshake, a failed
//! call, a server that echoes the request) passes through [`HttpAuth::redact`] before
//! it becomes an error, a log line or an event.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};

use crate::config::McpServerConfig;
use crate::error::McpError;

/// What replaces a credential in a message.
const REDACTED: &str = "[redacted]";

/// Header values shorter than this are not redacted from messages: a value such as
/// `1` or `json` would mangle every message, and is no secret.
const MIN_SECRET_HEADER_LEN: usize = 6;

/// An HTTP server's resolved credentials.
#[derive(Clone, Default)]
pub(crate) struct HttpAuth {
    /// The bearer token, when `bearer_token_env` is set.
    pub(crate) bearer: Option<String>,
    /// The extra headers.
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
    secrets: Vec<String>,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAuth")
            .field("bearer", &self.bearer.as_ref().map(|_| "***"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl HttpAuth {
    /// The credentials of `config`, the token read with `env` (the process environment
    /// in production). An unset or empty variable is an error naming it.
    pub(crate) fn resolve(
        config: &McpServerConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, McpError> {
        let invalid = |message: String| McpError::InvalidConfig {
            server: config.name.clone(),
            message,
        };
        config.check_credentials().map_err(invalid)?;
        let mut auth = Self::default();
        for (name, value) in &config.headers.0 {
            let (Ok(name), Ok(parsed)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                continue;
            };
            auth.headers.insert(name, parsed);
            if value.trim().len() >= MIN_SECRET_HEADER_LEN {
                auth.secrets.push(value.trim().to_owned());
            }
        }
        if let Some(var) = &config.bearer_token_env {
            let token = env(var)
                .map(|token| token.trim().to_owned())
                .filter(|token| !token.is_empty())
                .ok_or_else(|| {
                    invalid(format!(
                        "`bearer_token_env` names `{var}`, which is not set (or empty)"
                    ))
                })?;
            if HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
                return Err(invalid(format!(
                    "the token in `{var}` is not a valid header value"
                )));
            }
            auth.secrets.push(token.clone());
            auth.bearer = Some(token);
        }
        // Longest first, so that a secret containing another is replaced whole.
        auth.secrets
            .sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        Ok(auth)
    }

    /// `text` with every credential replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> McpServerConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_token_comes_from_the_named_variable_and_is_redacted() {
        let entry = config(
            "name = \"w\"\nurl = \"http://h/mcp\"\nbearer_token_env = \"W_TOKEN\"\n\
             headers = { X-Api-Key = \"key-123456\", X-Small = \"1\" }",
        );
        let auth = HttpAuth::resolve(&entry, |var| {
            (var == "W_TOKEN").then(|| " tok-abcdef ".to_owned())
        })
        .unwrap();
        assert_eq!(auth.bearer.as_deref(), Some("tok-abcdef"));
        assert_eq!(auth.headers.len(), 2);
        assert_eq!(
            auth.redact("401: Bearer tok-abcdef; X-Api-Key: key-123456; X-Small: 1"),
            "401: Bearer [redacted]; X-Api-Key: [redacted]; X-Small: 1"
        );
        let shown = format!("{auth:?} {entry:?}");
        assert!(
            !shown.contains("tok-abcdef") && !shown.contains("key-123456"),
            "{shown}"
        );
        assert!(shown.contains("W_TOKEN"), "{shown}");
    }

    #[test]
    fn an_unset_variable_or_a_bad_header_is_an_error_quoting_no_value() {
        let entry = config("name = \"w\"\nurl = \"http://h/mcp\"\nbearer_token_env = \"NOPE\"");
        let error = HttpAuth::resolve(&entry, |_| None).unwrap_err().to_string();
        assert!(
            error.contains("NOPE") && error.contains("not set"),
            "{error}"
        );
        let error = HttpAuth::resolve(&entry, |_| Some("  ".into()))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not set (or empty)"), "{error}");
        for (headers, needle) in [
            (
                "{ Authorization = \"Bearer s3cret-value\" }",
                "set by the transport",
            ),
            (
                "{ \"bad name\" = \"s3cret-value\" }",
                "not a valid header name",
            ),
            (
                "{ X-Key = \"s3cret-value\\n\" }",
                "not a valid header value",
            ),
        ] {
            let entry = config(&format!(
                "name = \"w\"\nurl = \"http://h/mcp\"\nheaders = {headers}"
            ));
            let error = entry.transport().unwrap_err().to_string();
            assert!(error.contains(needle), "{headers}: {error}");
            assert!(!error.contains("s3cret-value"), "{error}");
        }
        let stdio = config("name = \"s\"\ncommand = \"n\"\nbearer_token_env = \"T\"");
        let error = stdio.transport().unwrap_err().to_string();
        assert!(error.contains("only apply to `url`"), "{error}");
    }
}
