//! The `[[mcp_servers]]` configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use oxydra_types::SafetyTier;
use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// Default limit on the `initialize` handshake, in seconds.
pub const DEFAULT_INIT_TIMEOUT_SECS: u64 = 30;
/// Default limit on one tool call, in seconds.
pub const DEFAULT_CALL_TIMEOUT_SECS: u64 = 120;
/// Default number of restart attempts after a server died.
pub const DEFAULT_RESTART_ATTEMPTS: u32 = 3;
/// Default pause before the second restart attempt (it doubles for each further one).
pub const DEFAULT_RESTART_BACKOFF_MS: u64 = 200;

/// One `[[mcp_servers]]` entry: how to reach an MCP server and how to expose its tools.
///
/// ```
/// use oxydra_mcp::{McpServerConfig, McpTransportConfig};
/// use oxydra_types::SafetyTier;
///
/// let config: McpServerConfig = toml::from_str(r#"
///     name = "everything"
///     command = "npx"
///     args = ["-y", "@modelcontextprotocol/server-everything", "stdio"]
///     deny_tools = ["trigger-sampling-request"]
///     [tool_tiers]
///     echo = "read_only"
/// "#).unwrap();
/// assert!(matches!(config.transport().unwrap(), McpTransportConfig::Stdio { .. }));
/// assert_eq!(config.default_tier(), SafetyTier::SideEffecting);
/// assert_eq!(config.init_timeout_secs, 30);
/// assert!(toml::from_str::<McpServerConfig>("name = \"x\"\nurl = \"http://h/mcp\"\nport = 1").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name: tools appear as `<name>__<tool>`. ASCII letters, digits,
    /// `_` and `-`.
    pub name: String,
    /// Program of a stdio server (exclusive with `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments of `command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables added to the inherited environment of `command`. The
    /// interpreter settings of [`oxydra_tools::LOAD_PATH_VARIABLES`] are removed from
    /// what it inherits, and `PYTHONSAFEPATH=1` set, unless named here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory of `command` (default: the current directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Endpoint of a streamable-HTTP server, `http://` or `https://` (exclusive with `command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request to a `url` server (an API key, a tenant). Their
    /// values are treated as secrets: masked in `Debug` and redacted from errors.
    #[serde(default, skip_serializing_if = "McpHeaders::is_empty")]
    pub headers: McpHeaders,
    /// The environment variable holding the bearer token of a `url` server, sent as
    /// `Authorization: Bearer <token>`. The token is read when the server is started
    /// and never appears in logs, events or errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// When set, only these tools (by their MCP names) are exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_tools: Option<Vec<String>>,
    /// Tools (by their MCP names) never exposed; wins over `allow_tools`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_tools: Vec<String>,
    /// Safety tier of the server's tools (default `side_effecting`), refined by each
    /// tool's annotations: see [`crate::tool_tier`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<SafetyTier>,
    /// Per-tool tiers (by MCP name); they win over `tier` and annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_tiers: BTreeMap<String, SafetyTier>,
    /// Limit on starting the server and the `initialize` handshake (default 30 s).
    #[serde(default = "default_init_timeout")]
    pub init_timeout_secs: u64,
    /// Limit on one tool call (default 120 s); the call is then cancelled on the server.
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: u64,
    /// Restart attempts after the server died, made on the next call (default 3).
    #[serde(default = "default_restart_attempts")]
    pub restart_attempts: u32,
    /// Pause before the second attempt, doubling for each further one (default 200 ms).
    #[serde(default = "default_restart_backoff")]
    pub restart_backoff_ms: u64,
}

fn default_init_timeout() -> u64 {
    DEFAULT_INIT_TIMEOUT_SECS
}
fn default_call_timeout() -> u64 {
    DEFAULT_CALL_TIMEOUT_SECS
}
fn default_restart_attempts() -> u32 {
    DEFAULT_RESTART_ATTEMPTS
}
fn default_restart_backoff() -> u64 {
    DEFAULT_RESTART_BACKOFF_MS
}

/// The `headers` of an HTTP server: names and values, the values masked in `Debug`
/// (they often carry an API key).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct McpHeaders(pub BTreeMap<String, String>);

impl McpHeaders {
    /// Whether no header is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for McpHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|name| (name, "***")))
            .finish()
    }
}

/// How a server is reached, as [`McpServerConfig::transport`] validated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransportConfig {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    StreamableHttp {
        /// The endpoint URL.
        url: String,
    },
}

/// Headers an entry may not set: the transport sets them itself, and `Authorization`
/// comes from `bearer_token_env`.
const RESERVED: &[&str] = &[
    "authorization",
    "host",
    "content-type",
    "content-length",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
];

impl McpServerConfig {
    /// Checks an entry's `headers` and `bearer_token_env`; the message never quotes a value.
    pub(crate) fn check_credentials(&self) -> Result<(), String> {
        for (name, value) in &self.headers.0 {
            let parsed = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`headers`: `{name}` is not a valid header name"))?;
            if RESERVED.contains(&parsed.as_str()) {
                return Err(format!(
                    "`headers`: `{name}` is set by the transport (use `bearer_token_env` for a \
                     bearer token)"
                ));
            }
            HeaderValue::from_str(value).map_err(|_| {
                format!("`headers`: the value of `{name}` is not a valid header value")
            })?;
        }
        if let Some(var) = &self.bearer_token_env
            && (var.is_empty() || var.contains('=') || var.contains('\0'))
        {
            return Err("`bearer_token_env` must name an environment variable".to_owned());
        }
        Ok(())
    }

    /// A stdio server running `command` with `args`, everything else default.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::empty(name.into())
        }
    }

    /// A streamable-HTTP server at `url`, everything else default.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::empty(name.into())
        }
    }

    fn empty(name: String) -> Self {
        Self {
            name,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: McpHeaders::default(),
            bearer_token_env: None,
            allow_tools: None,
            deny_tools: Vec::new(),
            tier: None,
            tool_tiers: BTreeMap::new(),
            init_timeout_secs: DEFAULT_INIT_TIMEOUT_SECS,
            call_timeout_secs: DEFAULT_CALL_TIMEOUT_SECS,
            restart_attempts: DEFAULT_RESTART_ATTEMPTS,
            restart_backoff_ms: DEFAULT_RESTART_BACKOFF_MS,
        }
    }

    /// Check the entry and say how the server is reached.
    pub fn transport(&self) -> Result<McpTransportConfig, McpError> {
        let invalid = |message: &str| McpError::InvalidConfig {
            server: self.name.clone(),
            message: message.to_owned(),
        };
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                "`name` must be non-empty ASCII letters, digits, `_` or `-`",
            ));
        }
        if self.name.contains("__") {
            // Tools are named `<server>__<tool>`: a `__` in the server name is ambiguous.
            return Err(invalid("`name` must not contain `__`"));
        }
        if self.init_timeout_secs == 0 || self.call_timeout_secs == 0 {
            return Err(invalid(
                "`init_timeout_secs` and `call_timeout_secs` must be at least 1",
            ));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(invalid("set either `command` or `url`, not both")),
            (None, None) => Err(invalid(
                "set `command` (a stdio server) or `url` (a streamable-HTTP server)",
            )),
            (Some(_), None) if !self.headers.is_empty() || self.bearer_token_env.is_some() => Err(
                invalid("`headers` and `bearer_token_env` only apply to `url`"),
            ),
            (Some(command), None) if command.trim().is_empty() => {
                Err(invalid("`command` is empty"))
            }
            (Some(command), None) => Ok(McpTransportConfig::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            }),
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(invalid("`args`, `env` and `cwd` only apply to `command`"));
                }
                self.check_credentials()
                    .map_err(|message| invalid(&message))?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(invalid("`url` must start with http:// or https://"));
                }
                Ok(McpTransportConfig::StreamableHttp { url: url.clone() })
            }
        }
    }

    /// The server's tier before annotations: `tier`, or `side_effecting`.
    pub fn default_tier(&self) -> SafetyTier {
        self.tier.unwrap_or(SafetyTier::SideEffecting)
    }

    /// Whether the tool `mcp_name` is exposed under `allow_tools` / `deny_tools`.
    pub fn exposes(&self, mcp_name: &str) -> bool {
        if self.deny_tools.iter().any(|t| t == mcp_name) {
            return false;
        }
        self.allow_tools
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|t| t == mcp_name))
    }

    /// The `initialize` limit.
    pub fn init_timeout(&self) -> Duration {
        Duration::from_secs(self.init_timeout_secs)
    }

    /// The per-call limit.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.call_timeout_secs)
    }

    /// A short description of the transport, for status output.
    pub fn describe_transport(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = format!("stdio: {command}");
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => "unconfigured".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpServerConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn stdio_and_http_entries_parse() {
        let config =
            parse("name = \"fs\"\ncommand = \"node\"\nargs = [\"a\"]\nenv = { K = \"v\" }\ntier = \"privileged\"\ncall_timeout_secs = 5")
                .unwrap();
        assert_eq!(config.default_tier(), SafetyTier::Privileged);
        assert_eq!(config.call_timeout(), Duration::from_secs(5));
        match config.transport().unwrap() {
            McpTransportConfig::Stdio {
                command, args, env, ..
            } => {
                assert_eq!(command, "node");
                assert_eq!(args, ["a"]);
                assert_eq!(env["K"], "v");
            }
            other => panic!("{other:?}"),
        }
        let config = parse("name = \"web\"\nurl = \"https://example.com/mcp\"").unwrap();
        assert_eq!(
            config.transport().unwrap(),
            McpTransportConfig::StreamableHttp {
                url: "https://example.com/mcp".into()
            }
        );
        assert_eq!(config.describe_transport(), "http: https://example.com/mcp");
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        let err = parse("name = \"x\"\ncomand = \"node\"").unwrap_err();
        assert!(err.to_string().contains("comand"), "{err}");
        assert!(parse("name = \"x\"\ncommand = \"n\"\ntier = \"harmless\"").is_err());
        let cases = [
            ("name = \"x\"", "set `command`"),
            (
                "name = \"x\"\ncommand = \"n\"\nurl = \"http://h\"",
                "not both",
            ),
            ("name = \"a b\"\ncommand = \"n\"", "`name` must be"),
            ("name = \"ab\"\ncommand = \" \"", "`command` is empty"),
            ("name = \"a__b\"\ncommand = \"n\"", "must not contain `__`"),
            ("name = \"x\"\nurl = \"ftp://h\"", "http:// or https://"),
            (
                "name = \"x\"\nurl = \"http://h\"\nargs = [\"a\"]",
                "only apply to `command`",
            ),
            (
                "name = \"x\"\ncommand = \"n\"\ninit_timeout_secs = 0",
                "at least 1",
            ),
        ];
        for (text, needle) in cases {
            let err = parse(text).unwrap().transport().unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn allow_and_deny_lists_filter_tools() {
        let mut config = McpServerConfig::stdio("s", "n", ["x"]);
        assert!(config.exposes("anything"));
        config.allow_tools = Some(vec!["echo".into(), "add".into()]);
        config.deny_tools = vec!["add".into()];
        assert!(config.exposes("echo"));
        assert!(!config.exposes("add"), "deny wins");
        assert!(!config.exposes("other"));
    }

    #[test]
    fn serializes_back_to_what_it_read() {
        let config = McpServerConfig::http("w", "http://127.0.0.1:1/mcp");
        let text = toml::to_string(&config).unwrap();
        assert_eq!(parse(&text).unwrap(), config);
    }
}
