//! [`CommandHookConfig`]: one command hook as a configuration file writes it (the
//! `[[hooks]]` tables of `oxydra.toml`, docs/configuration.md, "Hooks").

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::hook::HookPoint;

/// The time a hook command has to decide when `timeout_secs` is not given.
pub const DEFAULT_HOOK_TIMEOUT_SECS: f64 = 10.0;

/// The longest `timeout_secs` accepted.
pub const MAX_HOOK_TIMEOUT_SECS: f64 = 600.0;

/// One command hook: a program run at a hook point, given the event as JSON on stdin,
/// answering with a JSON decision on stdout. As a `[[hooks]]` table:
///
/// ```
/// use oxydra_executor::{CommandHookConfig, HookPoint};
///
/// let hook: CommandHookConfig = toml::from_str(
///     "event = \"before_tool\"\ncommand = [\"python3\", \"hooks/guard.py\"]\nmatcher = [\"shell_exec\"]\n",
/// )
/// .unwrap();
/// assert_eq!(hook.event, HookPoint::BeforeTool);
/// assert_eq!(hook.display_name(), "python3");
/// assert!(hook.matches("shell_exec") && !hook.matches("file_read"));
/// assert!(hook.problem().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandHookConfig {
    /// The hook point.
    pub event: HookPoint,
    /// The program and its arguments (run directly, not through a shell).
    pub command: Vec<String>,
    /// The name events and error messages use (default: the program's file name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tool names (at `before_tool` and `after_tool`) or event types (at `on_event`)
    /// the hook runs for; absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<Vec<String>>,
    /// Seconds the command has to answer before it is killed (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
}

impl CommandHookConfig {
    /// A hook running `command` at `event`, for every tool or event, with the default
    /// time limit.
    pub fn new(event: HookPoint, command: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            event,
            command: command.into_iter().map(Into::into).collect(),
            name: None,
            matcher: None,
            timeout_secs: None,
        }
    }

    /// The hook's name: `name`, else the program's file name.
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let program = self.command.first().map_or("hook", String::as_str);
        Path::new(program)
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or(program)
            .to_owned()
    }

    /// The time limit.
    pub fn timeout(&self) -> Duration {
        let secs = self.timeout_secs.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS);
        // [`Self::problem`] refuses anything outside (0, 600]; a value made elsewhere
        // that is not a number of seconds falls back to the default.
        Duration::try_from_secs_f64(secs.min(MAX_HOOK_TIMEOUT_SECS))
            .unwrap_or(Duration::from_secs(10))
    }

    /// Whether the hook runs for `name` (a tool name or an event type).
    pub fn matches(&self, name: &str) -> bool {
        self.matcher
            .as_ref()
            .is_none_or(|names| names.iter().any(|wanted| wanted == name || wanted == "*"))
    }

    /// What is wrong with the entry, as (its key, a message), for a configuration
    /// file's checks to report; `None` when it can run.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        match self.command.first() {
            None => {
                return Some((
                    "command",
                    "expected the program and its arguments, found `[]`".to_owned(),
                ));
            }
            Some(program) if program.trim().is_empty() => {
                return Some(("command", "the program name is empty".to_owned()));
            }
            Some(_) => {}
        }
        if self.command.iter().any(|word| word.contains('\0')) {
            return Some(("command", "a word contains a NUL byte".to_owned()));
        }
        let in_range = |secs: f64| secs > 0.0 && secs <= MAX_HOOK_TIMEOUT_SECS;
        if let Some(secs) = self.timeout_secs
            && !in_range(secs)
        {
            return Some((
                "timeout_secs",
                format!(
                    "expected more than 0 and at most {MAX_HOOK_TIMEOUT_SECS} seconds, found {secs}"
                ),
            ));
        }
        if let Some(names) = &self.matcher
            && (names.is_empty() || names.iter().any(|name| name.trim().is_empty()))
        {
            return Some((
                "matcher",
                "expected tool names (or event types), none empty".to_owned(),
            ));
        }
        if self.matcher.is_some() && self.event == HookPoint::BeforeModelRequest {
            return Some((
                "matcher",
                "a before_model_request hook runs for every request; remove the matcher".to_owned(),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Result<CommandHookConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn an_entry_parses_with_its_defaults() {
        let hook =
            entry("event = \"before_tool\"\ncommand = [\"/opt/hooks/guard\", \"-v\"]\n").unwrap();
        assert_eq!(hook.event, HookPoint::BeforeTool);
        assert_eq!(hook.display_name(), "guard");
        assert_eq!(hook.timeout(), Duration::from_secs(10));
        assert!(hook.matches("shell_exec"));
        assert!(hook.problem().is_none());
        assert_eq!(
            hook,
            CommandHookConfig::new(HookPoint::BeforeTool, ["/opt/hooks/guard", "-v"])
        );
    }

    #[test]
    fn unknown_keys_and_events_are_errors() {
        assert!(entry("event = \"before_tool\"\ncommand = [\"x\"]\nshell = true\n").is_err());
        assert!(entry("event = \"PreToolUse\"\ncommand = [\"x\"]\n").is_err());
        assert!(entry("event = \"before_tool\"\ncommand = \"x y\"\n").is_err());
    }

    #[test]
    fn every_hook_point_is_spelled_as_its_name() {
        for point in [
            HookPoint::BeforeModelRequest,
            HookPoint::BeforeTool,
            HookPoint::AfterTool,
            HookPoint::OnEvent,
        ] {
            let text = format!("event = \"{point}\"\ncommand = [\"x\"]\n");
            assert_eq!(entry(&text).unwrap().event, point);
        }
    }

    #[test]
    fn bad_values_are_named() {
        let bad = |text: &str| entry(text).unwrap().problem().map(|(key, _)| key);
        assert_eq!(
            bad("event = \"before_tool\"\ncommand = []\n"),
            Some("command")
        );
        assert_eq!(
            bad("event = \"before_tool\"\ncommand = [\" \"]\n"),
            Some("command")
        );
        assert_eq!(
            bad("event = \"before_tool\"\ncommand = [\"x\"]\ntimeout_secs = 0\n"),
            Some("timeout_secs")
        );
        assert_eq!(
            bad("event = \"before_tool\"\ncommand = [\"x\"]\ntimeout_secs = 1e9\n"),
            Some("timeout_secs")
        );
        assert_eq!(
            bad("event = \"before_tool\"\ncommand = [\"x\"]\ntimeout_secs = nan\n"),
            Some("timeout_secs")
        );
        assert_eq!(
            bad("event = \"after_tool\"\ncommand = [\"x\"]\nmatcher = []\n"),
            Some("matcher")
        );
        assert_eq!(
            bad("event = \"before_model_request\"\ncommand = [\"x\"]\nmatcher = [\"a\"]\n"),
            Some("matcher")
        );
    }

    #[test]
    fn a_matcher_names_tools() {
        let hook = entry(
            "event = \"before_tool\"\ncommand = [\"x\"]\nmatcher = [\"shell_exec\", \"file_write\"]\ntimeout_secs = 0.5\n",
        )
        .unwrap();
        assert!(hook.matches("shell_exec"));
        assert!(!hook.matches("file_read"));
        assert_eq!(hook.timeout(), Duration::from_millis(500));
    }
}
