//! Reading a configuration file's text, with errors that name the file, the key and
//! the expected type.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Table;

use crate::ConfigError;
use crate::FileConfig;

/// The longest `runtime.session_wait_secs`: an hour.
const MAX_SESSION_WAIT_SECS: f64 = 3600.0;

/// The user config dir's file: `<config dir>/oxydra/config.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join("oxydra").join("config.toml"))
}

/// Parses and checks the text of the file at `path`.
pub fn parse(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    read(path, text).map(|(config, _)| config)
}

/// Parses the text of the file at `path` once, into the checked configuration and the
/// same tree as a table (what layering combines key by key).
pub(crate) fn read(path: &Path, text: &str) -> Result<(FileConfig, Table), ConfigError> {
    let tree = toml::de::DeTable::parse(text).map_err(|error| {
        let (line, column) = error
            .span()
            .map(|span| line_column(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: error.message().trim().to_owned(),
        }
    })?;
    let config: FileConfig =
        serde_path_to_error::deserialize(toml::Deserializer::from(tree.clone()))
            .map_err(|error| describe(path, text, &error))?;
    check(path, &config)?;
    // The same tree, untyped: it parsed as a configuration, so it is a table.
    let table = Table::deserialize(toml::Deserializer::from(tree)).map_err(|error| {
        ConfigError::Invalid {
            path: path.to_path_buf(),
            key: String::new(),
            message: error.message().trim().to_owned(),
            line: None,
        }
    })?;
    Ok((config, table))
}

/// Value checks serde cannot express.
pub(super) fn check(path: &Path, config: &FileConfig) -> Result<(), ConfigError> {
    let invalid = |key: &str, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: key.to_owned(),
        message: format!("invalid value for {key}: {message}"),
        line: None,
    };
    for (name, secret) in &config.secrets {
        super::secrets::check_secret(name, secret)
            .map_err(|message| invalid(&format!("secrets.{name}"), message))?;
    }
    let runtime = &config.runtime;
    // The limits' own checks (`RuntimeLimits::validate`, what the runtime's builder
    // runs), under the file's key; then what only a file has or refuses.
    if let Err(error) = runtime.limits.validate() {
        return Err(match error {
            oxydra::runtime::RuntimeError::InvalidLimit { key, message } => {
                invalid(&format!("runtime.{key}"), message)
            }
            other => invalid("runtime", other.to_string()),
        });
    }
    if let Some(wait) = runtime.session_wait_secs
        && !(wait.is_finite() && (0.0..=MAX_SESSION_WAIT_SECS).contains(&wait))
    {
        return Err(invalid(
            "runtime.session_wait_secs",
            format!("expected a number of seconds in [0, {MAX_SESSION_WAIT_SECS}], found {wait}"),
        ));
    }
    // A file's ratio is a fraction of the window; the runtime also takes more (never
    // summarise), which a file has no use for.
    let ratio = runtime.limits.summary_trigger_ratio;
    if ratio > 1.0 {
        return Err(invalid(
            "runtime.summary_trigger_ratio",
            format!("expected a number in (0, 1], found {ratio}"),
        ));
    }
    if config.memory.max_message_bytes == Some(0) {
        return Err(invalid(
            "memory.max_message_bytes",
            "expected at least 1, found 0".into(),
        ));
    }
    if config.provider.max_response_bytes == Some(0) {
        return Err(invalid(
            "provider.max_response_bytes",
            "expected at least 1, found 0".into(),
        ));
    }
    if config.provider.first_byte_timeout_secs == Some(0) {
        return Err(invalid(
            "provider.first_byte_timeout_secs",
            "expected at least 1, found 0".into(),
        ));
    }
    if let Some((key, message)) = config.checkpoints.problem() {
        return Err(invalid(&format!("checkpoints.{key}"), message));
    }
    // The file's URL is checked, but kept as written (flags' and the environment's
    // lose a trailing `/`).
    if let Some(url) = &config.provider.base_url
        && let Err(message) = http_url(url)
    {
        return Err(invalid("provider.base_url", message));
    }
    super::fallback::validate(&config.provider.fallback, http_url)
        .map_err(|(key, message)| invalid(&key, message))?;
    super::agents::validate(&config.agents).map_err(|(key, message)| invalid(&key, message))?;
    super::pricing::validate(&config.pricing).map_err(|(key, message)| invalid(&key, message))?;
    if let Err(error) = config.serve.validate() {
        return Err(match error {
            oxydra::coordinator::CoordinatorError::InvalidConfig { key, reason } => {
                invalid(&format!("serve.{key}"), reason)
            }
            other => invalid("serve", other.to_string()),
        });
    }
    for (index, hook) in config.hooks.iter().enumerate() {
        if let Some((key, message)) = hook.problem() {
            return Err(invalid(&format!("hooks[{index}].{key}"), message));
        }
    }
    for (index, server) in config.mcp_servers.iter().enumerate() {
        if let Err(error) = server.transport() {
            return Err(invalid(&format!("mcp_servers[{index}]"), error.to_string()));
        }
        if config
            .mcp_servers
            .iter()
            .take(index)
            .any(|other| other.name == server.name)
        {
            return Err(invalid(
                &format!("mcp_servers[{index}].name"),
                format!("the name `{}` is used twice", server.name),
            ));
        }
    }
    Ok(())
}

/// Turns a deserialisation error into a message naming the key and the expected type.
fn describe(
    path: &Path,
    text: &str,
    error: &serde_path_to_error::Error<toml::de::Error>,
) -> ConfigError {
    let inner = error.inner();
    let line = inner.span().map(|span| line_column(text, span.start).0);
    let key = error.path().to_string();
    let key = if key == "." { String::new() } else { key };
    let message = inner.message().trim();

    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, expected)) = rest.split_once('`')
    {
        let expected = expected
            .trim_start_matches(", expected one of ")
            .trim_start_matches(", expected ")
            .replace('`', "");
        let expected = if expected.contains("there are no fields") {
            "no keys".to_owned()
        } else {
            expected
        };
        // The path ends with the unknown key itself: the table is what holds it.
        let key = key
            .strip_suffix(field)
            .map(|table| table.trim_end_matches('.').to_owned())
            .unwrap_or(key);
        let table = if key.is_empty() {
            "at the top level".to_owned()
        } else {
            format!("in [{key}]")
        };
        return ConfigError::UnknownKey {
            path: path.to_path_buf(),
            key: field.to_owned(),
            table,
            expected,
            line,
        };
    }
    let message = if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
        let (expected, found) = (type_name(expected), found_name(found));
        if expected == "an integer" && found == "an integer" {
            // An integer of the right type that does not fit it.
            let direction = if rest.contains('-') { "small" } else { "large" };
            format!("invalid value for {key}: the number is too {direction}")
        } else {
            format!("invalid type for {key}: expected {expected}, found {found}")
        }
    } else if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.trim_end_matches('`');
        let table = if key.is_empty() {
            "the top level".to_owned()
        } else {
            format!("[{key}]")
        };
        format!("missing key `{field}` in {table}")
    } else if is_rule_key(&key) {
        // A `[[rules]]` table that is no valid rule: `invalid rule rules[0]: rule for tool
        // `x` (kind `max_calls`): …`.
        format!("invalid rule {key}: {message}")
    } else if message.starts_with("unknown variant") || message.starts_with("invalid value") {
        format!("invalid value for {key}: {message}")
    } else {
        format!("{key}: {message}")
    };
    ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
        line,
    }
}

/// Whether `key` is one rule of a list of rules (`rules[0]`, `agents[1].rules[2]`).
fn is_rule_key(key: &str) -> bool {
    key.rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with("rules[") && last.ends_with(']'))
}

/// A serde "expected" phrase in TOML words.
fn type_name(expected: &str) -> String {
    let expected = expected.trim();
    let name = match expected {
        "usize" | "u8" | "u16" | "u32" | "u64" | "i32" | "i64" | "isize" => "an integer",
        "f64" | "f32" => "a number",
        "a boolean" | "bool" => "a boolean",
        "a string" => "a string",
        "path string" => "a string (a path)",
        "a sequence" => "an array",
        _ if expected.starts_with("struct ") || expected.starts_with("a map") => "a table",
        _ if expected.starts_with("enum ") => "a string",
        _ => return expected.to_owned(),
    };
    name.to_owned()
}

/// A serde "unexpected" phrase in TOML words.
fn found_name(found: &str) -> String {
    let found = found.trim();
    let name = if found.starts_with("string") {
        "a string"
    } else if found.starts_with("integer") {
        "an integer"
    } else if found.starts_with("floating point") {
        "a float"
    } else if found.starts_with("boolean") {
        "a boolean"
    } else if found.starts_with("sequence") {
        "an array"
    } else if found.starts_with("map") {
        "a table"
    } else {
        return found.to_owned();
    };
    name.to_owned()
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.chars().count(), |newline| {
            before.get(newline + 1..).map_or(0, |s| s.chars().count())
        })
        + 1;
    (line, column)
}

/// Checks that `url` is an `http(s)://` URL (a `base_url` from a flag, the environment
/// or the file): the URL without trailing `/`, or what is wrong.
pub fn http_url(url: &str) -> Result<&str, String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.trim_end_matches('/'))
    } else {
        Err(format!(
            "expected an http:// or https:// URL, found `{url}`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(text: &str) -> String {
        parse(Path::new("/cfg/oxydra.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_design_example_parses() {
        let text = r#"
[provider]
kind = "openai"
base_url = "http://localhost:11434/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"

[runtime]
max_turns = 8
max_cost = 1.0
turn_timeout_secs = 120
summary_trigger_ratio = 0.8

[memory]
db = "oxydra.db"
retrieval = true

[tools.web_fetch]
allow_hosts = ["127.0.0.1"]

[[rules]]
tool = "shell_exec"
kind = "max_calls"
value = 3

[[agents]]
name = "researcher"
type = "agent"
description = "Research assistant"
system_prompt = "You research questions."
tools = ["file_read", "web_fetch"]

[[agents]]
name = "web-crawler"
type = "deterministic"
description = "Crawls websites"
parameters_schema = { type = "object", required = ["url"], properties = { url = { type = "string", format = "uri" } } }
[[agents.steps]]
tool = "web_fetch"
args = { url = "{{url}}" }
"#;
        let config = parse(Path::new("x.toml"), text).unwrap();
        assert_eq!(config.runtime.limits.max_turns, 8);
        assert_eq!(config.agents.len(), 2);
        assert_eq!(config.agents[1].steps[0].args["url"], "{{url}}");
        assert_eq!(
            config.agents[1].parameters_schema.as_ref().unwrap()["required"][0],
            "url"
        );
        assert_eq!(config.tools.web_fetch.allow_hosts, vec!["127.0.0.1"]);
        assert_eq!(config.rules.len(), 1);
    }

    #[test]
    fn bad_rules_name_the_rule() {
        let message = parse_err("[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\n");
        assert!(
            message.contains("invalid rule rules[0]: rule for tool `shell_exec`"),
            "{message}"
        );
        let message = parse_err("[[rules]]\ntool = \"x\"\nkind = \"sometimes\"\n");
        assert!(message.contains("rules[0]"), "{message}");
    }

    #[test]
    fn bad_agent_rules_name_the_agent_and_the_rule() {
        let message = parse_err(
            "[[agents]]\nname = \"a\"\ntype = \"agent\"\n\
             [[agents.rules]]\ntool = \"x\"\nkind = \"exit_loop\"\n\
             [[agents.rules]]\ntool = \"web_fetch\"\nkind = \"cooldown\"\nsecs = -1\n",
        );
        assert!(
            message.contains("invalid rule agents[0].rules[1]: rule for tool `web_fetch`"),
            "{message}"
        );
        assert!(message.contains("positive number"), "{message}");
        assert!(message.contains("/cfg/oxydra.toml"), "{message}");
    }

    #[test]
    fn unknown_key_names_file_table_and_expected_keys() {
        let message = parse_err("[runtime]\nmax_turn = 3\n");
        assert!(
            message.starts_with("/cfg/oxydra.toml: unknown key `max_turn` in [runtime]"),
            "{message}"
        );
        assert!(
            message.contains("expected one of max_turns, max_cost"),
            "{message}"
        );
        assert!(message.ends_with("at line 2"), "{message}");
        let top = parse_err("colour = 1\n");
        assert!(
            top.contains("unknown key `colour` at the top level"),
            "{top}"
        );
        let nested = parse_err("[tools.web_fetch]\nallow = []\n");
        assert!(nested.contains("in [tools.web_fetch]"), "{nested}");
    }

    #[test]
    fn the_library_types_are_the_tables_and_their_errors_name_key_and_line() {
        // `[runtime]` is the runtime's `RuntimeLimits` with the run's own keys.
        let config = parse(
            Path::new("x.toml"),
            "[runtime]\nturn_timeout_secs = 30\napprove = \"never\"\n\
             [provider.sampling]\ntemperature = 0.2\nseed = 7\n",
        )
        .unwrap();
        assert_eq!(
            config.runtime.limits.turn_timeout,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(
            config.runtime.limits.max_turns,
            oxydra::runtime::DEFAULT_MAX_TURNS
        );
        let sampling = config.provider.sampling.unwrap();
        assert_eq!((sampling.temperature, sampling.seed), (Some(0.2), Some(7)));
        let printed = toml::to_string(&config).unwrap();
        assert!(printed.contains("temperature = 0.2\n"), "{printed}");
        assert_eq!(parse(Path::new("x.toml"), &printed).unwrap(), config);

        let runtime = parse_err("[runtime]\nmax_turns = 2\nturn_timeout = 30\n");
        assert!(
            runtime.contains("unknown key `turn_timeout` in [runtime]")
                && runtime.contains("turn_timeout_secs")
                && runtime.contains("tool_choice")
                && runtime.ends_with("at line 3"),
            "{runtime}"
        );
        let hidden = parse_err("[runtime]\nsafety_buffer_tokens = 1\n");
        assert!(
            hidden.contains("unknown key `safety_buffer_tokens`"),
            "{hidden}"
        );
        let mistyped = parse_err("[runtime]\napprove = \"ask\"\nturn_timeout_secs = 1.5\n");
        assert!(
            mistyped.contains("invalid type for runtime.turn_timeout_secs")
                && mistyped.ends_with("at line 3"),
            "{mistyped}"
        );
        let approve = parse_err("[runtime]\nmax_turns = 2\napprove = \"maybe\"\n");
        assert!(approve.contains("runtime.approve"), "{approve}");
        let sampling = parse_err("[provider.sampling]\ntop_k = 2\ntemp = 0.2\n");
        assert!(
            sampling.contains("unknown key `temp` in [provider.sampling]")
                && sampling.ends_with("at line 3"),
            "{sampling}"
        );
        let sampling = parse_err("[provider.sampling]\nseed = \"x\"\n");
        assert!(sampling.contains("provider.sampling.seed"), "{sampling}");
    }

    #[test]
    fn wrong_type_names_key_and_types() {
        let message = parse_err("[runtime]\nmax_turns = \"many\"\n");
        assert!(
            message.contains(
                "invalid type for runtime.max_turns: expected an integer, found a string"
            ),
            "{message}"
        );
        let message = parse_err("[memory]\nretrieval = 1\n");
        assert!(
            message.contains("memory.retrieval: expected a boolean, found an integer"),
            "{message}"
        );
        let message = parse_err("[provider]\nkind = \"gemini-pro\"\n");
        assert!(message.contains("provider.kind"), "{message}");
        assert!(message.contains("gemini-pro"), "{message}");
    }

    #[test]
    fn bad_values_and_syntax_are_reported() {
        assert!(parse_err("[runtime]\nmax_turns = 0\n").contains("runtime.max_turns"));
        // The runtime's own checks, named by the file's key, with the file's path.
        for (text, key) in [
            ("max_cost = 0.0", "runtime.max_cost"),
            ("max_cost = -2.5", "runtime.max_cost"),
            ("turn_timeout_secs = 0", "runtime.turn_timeout_secs"),
            (
                "summary_trigger_ratio = 0.0",
                "runtime.summary_trigger_ratio",
            ),
            ("context_window = 0", "runtime.context_window"),
        ] {
            let message = parse_err(&format!("[runtime]\n{text}\n"));
            assert!(
                message.contains(&format!("invalid value for {key}: expected")),
                "{text}: {message}"
            );
            assert!(message.contains("oxydra.toml"), "{text}: {message}");
        }
        assert!(
            parse_err("[runtime]\nsummary_trigger_ratio = 1.5\n")
                .contains("runtime.summary_trigger_ratio")
        );
        assert!(
            parse_err("[runtime]\nsession_wait_secs = -1.0\n")
                .contains("runtime.session_wait_secs")
        );
        assert!(parse_err("[provider]\nbase_url = \"localhost\"\n").contains("provider.base_url"));
        assert!(
            parse_err("[provider]\nmax_response_bytes = 0\n")
                .contains("provider.max_response_bytes")
        );
        let cap = parse_err("[memory]\nmax_message_bytes = 0\n");
        assert!(
            cap.contains("invalid value for memory.max_message_bytes: expected at least 1"),
            "{cap}"
        );
        let cap = parse_err("[memory]\nmax_message_bytes = \"32MiB\"\n");
        assert!(
            cap.contains("memory.max_message_bytes: expected an integer, found a string"),
            "{cap}"
        );
        assert!(
            parse_err("[memory]\nmax_message_bytes = -1\n").contains("memory.max_message_bytes")
        );
        for (text, key) in [
            ("max_bytes = 0", "checkpoints.max_bytes"),
            ("keep_last = 0", "checkpoints.keep_last"),
            ("max_age_days = 0", "checkpoints.max_age_days"),
            ("max_age_days = 99999", "checkpoints.max_age_days"),
        ] {
            let message = parse_err(&format!("[checkpoints]\n{text}\n"));
            assert!(
                message.contains(&format!("invalid value for {key}: expected")),
                "{text}: {message}"
            );
        }
        for (text, key) in [
            ("keep_last = -1", "checkpoints.keep_last"),
            ("enabled = \"no\"", "checkpoints.enabled"),
            ("max_bytes = \"64MiB\"", "checkpoints.max_bytes"),
            ("keep = 3", "keep"),
        ] {
            let message = parse_err(&format!("[checkpoints]\n{text}\n"));
            assert!(message.contains(key), "{text}: {message}");
        }
        let config = parse(
            Path::new("/cfg/oxydra.toml"),
            "[checkpoints]\nenabled = false\nmax_bytes = 1024\nkeep_last = 3\nmax_age_days = 7\n",
        )
        .unwrap();
        assert!(!config.checkpoints.enabled);
        assert_eq!(config.checkpoints.max_bytes, 1024);
        assert_eq!(config.checkpoints.keep_last, 3);
        assert_eq!(config.checkpoints.max_age_days, Some(7));
        let lease = parse_err("[serve]\nrun_lease_ttl_ms = 50\n");
        assert!(
            lease.contains("serve.run_lease_ttl_ms") && lease.contains("50"),
            "{lease}"
        );
        for ttl in ["0", "2592001", "-5", "1.5", "\"1d\""] {
            let message = parse_err(&format!("[serve]\napproval_ttl_secs = {ttl}\n"));
            assert!(
                message.contains("serve.approval_ttl_secs"),
                "{ttl}: {message}"
            );
        }
        assert!(
            parse(
                Path::new("/cfg/oxydra.toml"),
                "[serve]\napproval_ttl_secs = 2592000\n"
            )
            .is_ok()
        );
        let syntax = parse_err("[runtime\n");
        assert!(syntax.starts_with("/cfg/oxydra.toml: line 1"), "{syntax}");
        let missing = parse_err("[[agents]]\ntype = \"agent\"\n");
        assert!(missing.contains("missing key `name`"), "{missing}");
        let steps = parse_err("[[agents]]\nname = \"a\"\ntype = \"deterministic\"\n");
        assert!(steps.contains("agents[0].steps"), "{steps}");
    }
}
