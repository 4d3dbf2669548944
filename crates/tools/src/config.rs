//! Settings of the built-in tools, as the CLI reads them from `[tools]`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::limits::{DEFAULT_MAX_MEDIA_BYTES, DEFAULT_OUTPUT_LIMIT_BYTES};
use crate::network_policy::NetworkPolicy;
use crate::protected::ProtectedPaths;
use crate::sandbox::SandboxConfig;
use crate::write_access::WriteAccess;

/// Settings of all built-in tools (the `[tools]` table of the config file).
///
/// ```
/// use oxydra_tools::BuiltinToolsConfig;
///
/// let config: BuiltinToolsConfig = serde_json::from_value(serde_json::json!({
///     "web_fetch": { "allow_hosts": ["127.0.0.1"] },
///     "shell": { "max_timeout_secs": 120 }
/// })).unwrap();
/// assert_eq!(config.web_fetch.allow_hosts, ["127.0.0.1"]);
/// assert_eq!(config.shell.default_timeout_secs, 60);
/// assert_eq!(config.output_limit_bytes, 16 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuiltinToolsConfig {
    /// Output over this many bytes is truncated with a marker (default 16 KiB).
    pub output_limit_bytes: usize,
    /// What `web_fetch` may reach.
    pub web_fetch: NetworkPolicy,
    /// Timeouts of `shell_exec`.
    pub shell: ShellConfig,
    /// Limits of `file_search`.
    pub file_search: SearchConfig,
    /// Limits of `file_read`.
    pub file_read: ReadConfig,
    /// Protected paths the file tools may write all the same (`[tools] allow_protected =
    /// [".vscode/settings.json"]`): files, or directories with what is beneath them,
    /// relative to the workspace root. Oxydra's own files stay refused. The CLI honours
    /// it only from a trusted configuration file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_protected: Vec<PathBuf>,
    /// The protected-paths policy of the file tools (set by the embedding program,
    /// never read from a file); the tools add `allow_protected` to it.
    #[serde(skip)]
    pub protected: ProtectedPaths,
    /// The sandbox `shell_exec` runs commands in (set by the embedding program from
    /// its trusted configuration and flags, never from `[tools]`). Its mode binds the
    /// file tools too: `read-only` refuses `file_write` and `file_edit`
    /// ([`Self::write_access`]).
    #[serde(skip)]
    pub sandbox: SandboxConfig,
}

impl BuiltinToolsConfig {
    /// The policy the file tools apply: `protected` allowing `allow_protected`.
    pub fn write_policy(&self) -> ProtectedPaths {
        self.protected
            .clone()
            .allowing(self.allow_protected.iter().cloned())
    }

    /// What every built-in tool that writes may change: nothing when the sandbox mode
    /// is `read-only`, else the workspace minus [`Self::write_policy`].
    pub fn write_access(&self) -> WriteAccess {
        WriteAccess::new(self.sandbox.mode, self.write_policy())
    }
}

impl Default for BuiltinToolsConfig {
    fn default() -> Self {
        Self {
            output_limit_bytes: DEFAULT_OUTPUT_LIMIT_BYTES,
            web_fetch: NetworkPolicy::default(),
            shell: ShellConfig::default(),
            file_search: SearchConfig::default(),
            file_read: ReadConfig::default(),
            allow_protected: Vec::new(),
            protected: ProtectedPaths::default(),
            sandbox: SandboxConfig::default(),
        }
    }
}

/// Timeouts of `shell_exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Timeout when the call gives none (default 60 s).
    pub default_timeout_secs: u64,
    /// The most a call may ask for; larger requests are capped (default 600 s).
    pub max_timeout_secs: u64,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout_secs: 60,
            max_timeout_secs: 600,
        }
    }
}

/// Limits of `file_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Matching lines reported at most (default 200).
    pub max_results: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self { max_results: 200 }
    }
}

/// Limits of `file_read` (`[tools.file_read]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadConfig {
    /// The largest image (PNG, JPEG, GIF, WebP) or PDF `file_read` attaches, in bytes
    /// (default [`DEFAULT_MAX_MEDIA_BYTES`], 5 MiB); a larger one is a tool error
    /// that says so.
    pub max_media_bytes: usize,
}

impl Default for ReadConfig {
    fn default() -> Self {
        Self {
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<BuiltinToolsConfig>(serde_json::json!({
            "web_fetch": { "allow_host": ["x"] }
        }))
        .unwrap_err();
        assert!(err.to_string().contains("allow_host"), "{err}");
        assert!(
            serde_json::from_value::<BuiltinToolsConfig>(serde_json::json!({"shel": {}})).is_err()
        );
    }

    #[test]
    fn empty_is_default() {
        let config: BuiltinToolsConfig = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(config, BuiltinToolsConfig::default());
        assert_eq!(config.web_fetch.max_body_bytes, 2 * 1024 * 1024);
        assert_eq!(config.web_fetch.max_redirects, 5);
        assert_eq!(config.file_read.max_media_bytes, 5 * 1024 * 1024);
    }

    #[test]
    fn the_media_cap_is_a_key_of_file_read() {
        let config: BuiltinToolsConfig = serde_json::from_value(serde_json::json!({
            "file_read": { "max_media_bytes": 1024 }
        }))
        .unwrap();
        assert_eq!(config.file_read.max_media_bytes, 1024);
        assert!(
            serde_json::from_value::<BuiltinToolsConfig>(
                serde_json::json!({"file_read": {"max_media": 1}})
            )
            .is_err()
        );
    }
}
