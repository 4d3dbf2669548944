//! `oxydra init`: writes a commented configuration file to start from. Its provider is
//! the one `oxydra run` would use now (the environment's key, a local model at hand, an
//! `OXYDRA_PROVIDER` …), so that writing the file never changes what works; every
//! other setting is shown with its default, commented out.

use std::io::Write;
use std::path::PathBuf;

use crate::args::InitArgs;
use crate::config::{self, EffectiveProvider, ProviderKind};
use crate::error::CliError;
use crate::exit_code::Exit;

/// The comment above `[provider]`: every kind, from the provider table, then `local`.
fn kinds_comment() -> String {
    let mut comment = String::new();
    for (index, kind) in ProviderKind::all().iter().enumerate() {
        let lead = if index == 0 { "# kind: " } else { "#       " };
        let name = format!("\"{}\"", kind.as_str());
        comment.push_str(&format!("{lead}{name:<11} {}\n", kind.summary()));
    }
    comment.push_str(
        "#                   (openai: any OpenAI-compatible server, set base_url; local: \
         model = PATH.gguf\n#                   or hf:OWNER/REPO/FILE.gguf, no server, no key)\n",
    );
    comment
}

/// The embedded model, commented out: no server, no key, the recommended model
/// downloaded once.
fn local_example() -> String {
    format!(
        "# or the embedded model (no server, no key; about 1 GB downloaded once):\n\
         # kind = \"local\"\n# model = {}\n",
        quoted(crate::error::RECOMMENDED_LOCAL_MODEL)
    )
}

/// A TOML string.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// The `[provider]` table for `provider` (`None`: nothing is configured yet).
fn provider_table(provider: Option<&EffectiveProvider>) -> String {
    let Some(provider) = provider else {
        return format!(
            "[provider]\n{}# No provider is configured yet: uncomment one, for example\n\
             # kind = \"openai\"\n# model = \"gpt-4o-mini\"\n\
             # api_key_env = \"OPENAI_API_KEY\"      # the variable the key is read from\n\
             #\n{}",
            kinds_comment(),
            local_example()
        );
    };
    let mut table = format!(
        "[provider]\n{}kind = {}\n",
        kinds_comment(),
        quoted(provider.kind.as_str())
    );
    if provider.kind == ProviderKind::Local {
        table.push_str(&format!(
            "model = {}\n# threads = 4                          # CPU threads (default: all cores)\n",
            quoted(&provider.model)
        ));
        return table;
    }
    table.push_str(&format!(
        "base_url = {}\nmodel = {}\n",
        quoted(&provider.base_url),
        quoted(&provider.model)
    ));
    if let Some(var) = &provider.api_key_env {
        table.push_str(&format!(
            "api_key_env = {}   # the variable the key is read from; never the key itself\n",
            quoted(var)
        ));
    }
    table.push_str("#\n");
    table.push_str(&local_example());
    table
}

/// `[runtime]` at the runtime's defaults, commented out.
fn runtime_table() -> String {
    let limits = oxydra::runtime::RuntimeLimits::default();
    let line = |setting: String, comment: &str| {
        if comment.is_empty() {
            format!("# {setting}\n")
        } else {
            format!("{:<39}# {comment}\n", format!("# {setting}"))
        }
    };
    [
        "\n[runtime]\n".to_owned(),
        line(
            format!("max_turns = {}", limits.max_turns),
            "provider calls per task (>= 1)",
        ),
        line(
            "max_cost = 1.0".to_owned(),
            "US dollars per task; the model's price must be known",
        ),
        line(
            format!("turn_timeout_secs = {}", limits.turn_timeout.as_secs()),
            "",
        ),
        line(
            format!("summary_trigger_ratio = {}", limits.summary_trigger_ratio),
            "summarise older turns past this share of the context",
        ),
        line("max_output_tokens = 4096".to_owned(), ""),
        line("system_prompt = \"You are ...\"".to_owned(), ""),
        line(
            "approve = \"ask\"".to_owned(),
            "ask | always | never: consent for privileged tools",
        ),
        line(
            format!(
                "session_wait_secs = {:?}",
                oxydra::runtime::DEFAULT_SESSION_WAIT.as_secs_f64()
            ),
            "",
        ),
    ]
    .concat()
}

/// Everything else, at its default, commented out.
const REST: &str = r#"
[memory]
# db = "oxydra.db"                     # relative to this file; default in the user data dir
# retrieval = true
# max_message_bytes = 33554432         # largest stored message, images included (32 MiB)

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

# [[hooks]]                            # a command asked before each tool call (docs/configuration.md)
# event = "before_tool"                # before_model_request | before_tool | after_tool | on_event
# command = ["/home/me/bin/guard"]     # JSON event on stdin, a JSON decision on stdout
# matcher = ["shell_exec"]             # tool names; absent: every tool
# timeout_secs = 10                    # killed after this; a failing before_tool hook denies
"#;

/// The commented configuration, with `provider` (the one a run would use now).
pub fn template(provider: Option<&EffectiveProvider>) -> String {
    format!(
        "# oxydra configuration. Check it with `oxydra run --print-config`.\n\n{}{}{REST}",
        provider_table(provider),
        runtime_table()
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
    let env = |name: &str| std::env::var(name).ok();
    let provider = config::current_provider(&env);
    write_new(&path, &template(provider.as_ref()), args.force)?;
    let using = provider.as_ref().map_or_else(
        || "no provider yet (see its [provider] comments)".to_owned(),
        |provider| format!("provider {} ({})", provider.kind.as_str(), provider.model),
    );
    eprintln!(
        "wrote {} with {using} — check it with `oxydra run --print-config --config {}`",
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

    fn kind(name: &str) -> ProviderKind {
        ProviderKind::from_name(name).unwrap()
    }

    fn provider(kind: ProviderKind, model: &str, key: Option<&str>) -> EffectiveProvider {
        let url = kind
            .http()
            .map_or("in-process", |info| info.default_base_url);
        EffectiveProvider {
            kind,
            base_url: url.to_owned(),
            model: model.to_owned(),
            api_key_env: key.map(str::to_owned),
            api_key: None,
            max_response_bytes: None,
            first_byte_timeout_secs: None,
            api: None,
            reasoning_effort: None,
            thinking_budget: None,
            threads: None,
            sampling: None,
            hf_endpoint: None,
            fallback: Vec::new(),
        }
    }

    #[test]
    fn every_template_parses_with_its_provider_and_names_all_kinds() {
        let cases = [
            Some(provider(kind("local"), "/m/it's \"x\".gguf", None)),
            Some(provider(
                kind("gemini"),
                "gemini-2.5-flash",
                Some("GEMINI_API_KEY"),
            )),
            Some(provider(kind("ollama"), "llama3.2", None)),
            Some(provider(
                kind("anthropic"),
                "claude-sonnet-4-5",
                Some("ANTHROPIC_API_KEY"),
            )),
            None,
        ];
        for case in cases {
            let text = template(case.as_ref());
            let parsed = config::parse(std::path::Path::new("oxydra.toml"), &text)
                .unwrap_or_else(|error| panic!("{error}\n{text}"));
            for kind in ProviderKind::all() {
                assert!(text.contains(&format!("\"{}\"", kind.as_str())), "{text}");
            }
            match case {
                Some(expected) => {
                    assert_eq!(parsed.provider.kind, Some(expected.kind));
                    assert_eq!(
                        parsed.provider.model.as_deref(),
                        Some(expected.model.as_str())
                    );
                    assert_eq!(parsed.provider.api_key_env, expected.api_key_env);
                    assert_eq!(
                        parsed.provider.base_url.is_none(),
                        expected.kind == ProviderKind::Local
                    );
                }
                None => assert_eq!(parsed.provider, config::ProviderSection::default()),
            }
        }
    }

    /// The template's commented memory cap, uncommented, is the default.
    #[test]
    fn the_commented_local_example_parses_once_uncommented() {
        for provider in [
            None,
            Some(provider(kind("openai"), "gpt-4o-mini", Some("K"))),
        ] {
            let text = provider_table(provider.as_ref());
            let example: String = text
                .lines()
                .skip_while(|line| !line.starts_with("# or the embedded model"))
                .skip(1)
                .map(|line| format!("{}\n", line.trim_start_matches("# ")))
                .collect();
            let parsed = config::parse(
                std::path::Path::new("oxydra.toml"),
                &format!("[provider]\n{example}"),
            )
            .unwrap();
            assert_eq!(parsed.provider.kind, Some(ProviderKind::Local), "{text}");
            assert_eq!(
                parsed.provider.model.as_deref(),
                Some(crate::error::RECOMMENDED_LOCAL_MODEL)
            );
        }
    }

    #[test]
    fn the_templates_message_cap_is_the_default() {
        let text = template(None);
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix("# max_message_bytes"))
            .unwrap();
        let parsed = config::parse(
            std::path::Path::new("oxydra.toml"),
            &format!("[memory]\nmax_message_bytes{line}\n"),
        )
        .unwrap();
        assert_eq!(
            parsed.memory.max_message_bytes,
            Some(oxydra::memory::DEFAULT_MAX_MESSAGE_BYTES)
        );
    }
}
