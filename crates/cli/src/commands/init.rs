//! `oxydra init`: writes a commented configuration file to start from. The provider
//! is picked from the environment (an Anthropic key, else OpenAI); every other setting
//! is shown with its default, commented out.

use std::io::Write;
use std::path::PathBuf;

use crate::args::InitArgs;
use crate::config;
use crate::error::CliError;
use crate::exit_code::Exit;

/// The provider table for an OpenAI key (or none yet).
const OPENAI_PROVIDER: &str = r#"[provider]
kind = "openai"                        # "openai" (and any OpenAI-compatible server) or "anthropic"
base_url = "https://api.openai.com/v1" # Ollama: "http://localhost:11434/v1" (and drop api_key_env)
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"         # the variable the key is read from; never the key itself
"#;

/// The provider table for an Anthropic key.
const ANTHROPIC_PROVIDER: &str = r#"[provider]
kind = "anthropic"                     # "openai" (and any OpenAI-compatible server) or "anthropic"
base_url = "https://api.anthropic.com"
model = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY"      # the variable the key is read from; never the key itself
"#;

/// Everything else, at its default, commented out.
const REST: &str = r#"
[runtime]
# max_turns = 8                        # provider calls per task (>= 1)
# max_cost = 1.0                       # US dollars per task; the model's price must be known
# turn_timeout_secs = 120
# summary_trigger_ratio = 0.8          # summarise older turns past this share of the context
# max_output_tokens = 4096
# system_prompt = "You are ..."
# approve = "ask"                      # ask | always | never: consent for privileged tools
# session_wait_secs = 2.0

[memory]
# db = "oxydra.db"                     # relative to this file; default in the user data dir
# retrieval = true

[tools]
# output_limit_bytes = 16384
# [tools.web_fetch]
# allow_hosts = []                     # hosts exempt from the private-address block
# [tools.shell]
# default_timeout_secs = 60

# [[mcp_servers]]                      # tools of an MCP server (see docs/mcp.md in the repository)
# name = "files"
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
"#;

/// The commented configuration, with the provider the environment suggests.
pub fn template(anthropic: bool) -> String {
    let provider = if anthropic {
        ANTHROPIC_PROVIDER
    } else {
        OPENAI_PROVIDER
    };
    format!(
        "# oxydra configuration. Check it with `oxydra run --print-config`.\n\n{provider}{REST}"
    )
}

/// Runs `oxydra init`.
pub fn run(args: &InitArgs) -> Result<Exit, CliError> {
    let path = match &args.path {
        Some(path) => path.clone(),
        None => config::user_config_path().ok_or_else(|| {
            CliError::Setup(
                "no user config directory is known; give the file: oxydra init FILE".into(),
            )
        })?,
    };
    let anthropic = std::env::var_os("ANTHROPIC_API_KEY").is_some()
        && std::env::var_os("OPENAI_API_KEY").is_none();
    write_new(&path, &template(anthropic), args.force)?;
    eprintln!(
        "wrote {} — check it with `oxydra run --print-config --config {}`",
        path.display(),
        path.display()
    );
    Ok(Exit::Done)
}

/// Writes `text` to `path`, which must not exist unless `force`.
fn write_new(path: &PathBuf, text: &str, force: bool) -> Result<(), CliError> {
    let io_error = |what, source| CliError::Io {
        what,
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|source| io_error("cannot create the configuration directory", source))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            CliError::Setup(format!(
                "{} exists already; keep it, or overwrite it with `oxydra init --force`",
                path.display()
            ))
        } else {
            io_error("cannot write the configuration file", source)
        }
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|source| io_error("cannot write the configuration file", source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_templates_parse_as_a_configuration() {
        for anthropic in [false, true] {
            let text = template(anthropic);
            let parsed = config::parse(std::path::Path::new("oxydra.toml"), &text);
            assert!(parsed.is_ok(), "{parsed:?}\n{text}");
        }
    }
}
