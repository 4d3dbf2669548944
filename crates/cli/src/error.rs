//! Everything that can make `oxydra` fail, each naming the file, flag, key or
//! variable at fault.

use std::path::PathBuf;

use crate::exit_code::Exit;

/// How to configure a provider: shown when none is configured. The kinds, their key
/// variables and default models come from the provider crate's table.
pub fn provider_howto() -> String {
    use oxydra::provider::PROVIDERS;
    let mut keyed = PROVIDERS.iter().filter(|info| !info.keyless);
    let first = keyed.next().map_or_else(String::new, |info| {
        format!("export {}={}...", info.api_key_var, info.key_prefix)
    });
    let others: Vec<String> = keyed
        .map(|info| format!("{}={}...", info.api_key_var, info.key_prefix))
        .collect();
    let others = if others.is_empty() {
        String::new()
    } else {
        format!("  (or {})", others.join(", "))
    };
    let servers: String = PROVIDERS
        .iter()
        .filter(|info| info.keyless)
        .map(|info| {
            format!(
                "--provider {} --model {}, or ",
                info.name, info.default_model
            )
        })
        .collect();
    format!(
        "no provider configured. Three ways to get going:
  1. an API key:  {first}{others}
  2. a model server of your own (no key): {servers}any
     OpenAI-compatible server (llama.cpp, vLLM, LM Studio): --base-url http://localhost:8080/v1 --model NAME
  3. a local model file, run in-process:  --provider local --model PATH.gguf
       (fetch a recommended one, about 1 GB, once: oxydra run --provider local --model {RECOMMENDED_LOCAL_MODEL} \"hi\";
        or export OXYDRA_LOCAL_MODEL=PATH.gguf, or put one at {})
  A [provider] table (kind, base_url, model, api_key_env) in ./oxydra.toml or the user config
  file sets any of these (`oxydra init` writes a commented one to start from)",
        default_model_path()
    )
}

/// The Hugging Face name of the local model the messages recommend: a small model
/// that makes a fair agent on a CPU (docs/provider.md, "Which model").
pub const RECOMMENDED_LOCAL_MODEL: &str =
    "hf:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf";

/// Where the local provider looks for a model when none is named, on this machine.
fn default_model_path() -> String {
    dirs::data_dir().map_or_else(
        || "<data dir>/oxydra/models/default.gguf".to_owned(),
        |dir| {
            dir.join("oxydra")
                .join("models")
                .join("default.gguf")
                .display()
                .to_string()
        },
    )
}

/// What the local provider needs: shown when it is picked without a model.
pub fn local_model_howto() -> String {
    format!(
        "the local provider needs a GGUF model: --model PATH.gguf, --model hf:OWNER/REPO/FILE.gguf \
(downloaded once; a recommended one: --model {RECOMMENDED_LOCAL_MODEL}), OXYDRA_LOCAL_MODEL=PATH.gguf, \
[provider] model in the configuration, or a file at {}",
        default_model_path()
    )
}

/// An error of the `oxydra` command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file or the trust store (it names the file, the key and the line).
    #[error(transparent)]
    Config(#[from] oxydra_config::ConfigError),
    /// A flag has a bad value.
    #[error("invalid value for {flag}: {message}")]
    Flag {
        /// The flag (`--max-cost`).
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An environment variable has a bad value.
    #[error("invalid value in environment variable {var}: {message}")]
    Env {
        /// The variable.
        var: String,
        /// What is wrong.
        message: String,
    },
    /// No provider could be picked.
    #[error("{}", provider_howto())]
    NoProvider,
    /// The local provider was picked but no model is named.
    #[error("{}", local_model_howto())]
    NoLocalModel,
    /// The local model could not be downloaded or loaded.
    #[error("local model {model}: {message}")]
    LocalModel {
        /// The model as given (a path or `hf:` name).
        model: String,
        /// What went wrong.
        message: String,
    },
    /// The API key variable the configuration names is not set.
    #[error(
        "the API key variable {var} (from {origin}) is not set; export it to call {base_url}, or use --base-url for a server that needs no key"
    )]
    MissingApiKey {
        /// The variable.
        var: String,
        /// Where it was named.
        origin: String,
        /// The provider URL.
        base_url: String,
    },
    /// An untrusted project file's provider settings were ignored and no flag or
    /// variable picks the provider instead: running another provider would surprise.
    #[error(
        "{} is not trusted, so its provider settings are ignored ({keys}); trust the file with \
         `oxydra trust {}`, or pass --base-url (or --provider and --model) to choose the \
         provider yourself", path.display(), oxydra_config::shell_quoted(path)
    )]
    UntrustedProvider {
        /// The project file.
        path: PathBuf,
        /// The ignored keys of its `[provider]`.
        keys: String,
    },
    /// A directory or file could not be created or used.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Reading stdin or writing stdout failed.
    #[error("{what}: {source}")]
    Stdio {
        /// What was being done.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The memory store failed.
    #[error("memory database {}: {message}", path.display())]
    Memory {
        /// The database file.
        path: PathBuf,
        /// What happened.
        message: String,
    },
    /// A database named on purpose (`--db`, `OXYDRA_DB`, `[memory] db`) does not exist.
    #[error("no database at {}: check the path (`--db`, `OXYDRA_DB` or `[memory] db`)", path.display())]
    DatabaseMissing {
        /// The path that was given.
        path: PathBuf,
    },
    /// `--continue` found no stored session of the workspace.
    #[error(
        "no stored session to continue in workspace {} (database {}; `oxydra sessions list` \
         shows every session, `--session ID` continues one)",
        workspace.display(),
        db.display()
    )]
    NothingToContinue {
        /// The database file.
        db: PathBuf,
        /// The workspace no session was found for.
        workspace: PathBuf,
    },
    /// A session that does not exist was asked for.
    #[error("session `{id}` not found in {}", db.display())]
    SessionNotFound {
        /// The id.
        id: String,
        /// The database file.
        db: PathBuf,
    },
    /// A session id prefix names more than one stored session.
    #[error(
        "`{prefix}` names {count} sessions ({}{}): give more of the id",
        shown.join(", "),
        if *count > shown.len() { ", …" } else { "" }
    )]
    AmbiguousSession {
        /// What was given.
        prefix: String,
        /// How many stored sessions start with it.
        count: usize,
        /// Some of them.
        shown: Vec<String>,
    },
    /// The MCP servers could not be set up (a bad `[[mcp_servers]]` entry or a tool
    /// name that is already taken).
    #[error("MCP servers: {0}")]
    Mcp(String),
    /// `oxydra serve` cannot listen on its address.
    #[error("cannot listen on {addr} (from {origin}): {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Where it came from: `--addr`, `serve.addr`, or the default.
        origin: String,
        /// Why.
        source: std::io::Error,
    },
    /// `oxydra serve` was asked to listen beyond loopback with no bearer token.
    #[error(
        "refusing to serve {addr} (from {origin}) without authentication: it is reachable \
         from other machines. Set a bearer token (the variable OXYDRA_SERVE_TOKEN, or the one \
         serve.auth_token_env names), listen on 127.0.0.1, or pass --insecure-no-auth \
         (serve.allow_unauthenticated = true) to serve it open to anyone who can reach it"
    )]
    Unauthenticated {
        /// The address.
        addr: String,
        /// Where it came from: `--addr`, `serve.addr`, or the default.
        origin: String,
    },
    /// The `--output-schema` file is unreadable, not JSON, or not a JSON Schema.
    #[error("{}: not a usable output schema (given with --output-schema): {message}", path.display())]
    OutputSchema {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The coordinator failed.
    #[error("coordinator: {0}")]
    Coordinator(String),
    /// A running `oxydra serve` (`--server`) could not be reached.
    #[error("{server}: {message}")]
    Server {
        /// The server's URL.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// A running `oxydra serve` refused a request: its status and error code.
    #[error("{server} answered {status} {code}: {message}")]
    Api {
        /// The server's URL.
        server: String,
        /// The HTTP status.
        status: u16,
        /// The API's error code (`run_not_found`, `invalid_query` …).
        code: String,
        /// Its message.
        message: String,
    },
    /// The agent runtime could not be set up.
    #[error("cannot set up the agent: {0}")]
    Setup(String),
    /// An eval suite is unusable (the message names the file, task and key).
    #[error("{0}")]
    Eval(String),
    /// The run ended with an error (already reported as an event).
    #[error("{kind}: {message}")]
    Run {
        /// The error kind (`provider`, `budget_exceeded`, `cancelled` …).
        kind: String,
        /// What happened.
        message: String,
    },
}

impl CliError {
    /// Writing to stdout failed (`cannot write to stdout: …`).
    pub fn stdout(source: std::io::Error) -> Self {
        Self::Stdio {
            what: "cannot write to stdout",
            source,
        }
    }

    /// Whether this is a write to a stdout whose reader has gone (`… | head`).
    pub fn is_closed_stdout(&self) -> bool {
        matches!(self, Self::Stdio { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// A stable, snake_case kind for the `error` event of `--output jsonl`.
    pub fn kind(&self) -> &str {
        match self {
            Self::Run { kind, .. } => kind,
            Self::NoProvider
            | Self::MissingApiKey { .. }
            | Self::NoLocalModel
            | Self::UntrustedProvider { .. } => "no_provider",
            Self::LocalModel { .. } => "local_model",
            Self::SessionNotFound { .. }
            | Self::NothingToContinue { .. }
            | Self::AmbiguousSession { .. } => "session_not_found",
            Self::DatabaseMissing { .. } => "memory",
            Self::Memory { .. } => "memory",
            Self::Mcp(_) => "mcp",
            Self::Coordinator(_) => "coordinator",
            Self::Server { .. } => "server",
            Self::Api { code, .. } => code,
            Self::ReadFile { .. } | Self::Io { .. } | Self::Stdio { .. } | Self::Bind { .. } => {
                "io"
            }
            Self::Config(error) if !error.is_usage() => "io",
            Self::Config(_)
            | Self::Flag { .. }
            | Self::Env { .. }
            | Self::Unauthenticated { .. }
            | Self::OutputSchema { .. }
            | Self::Eval(_)
            | Self::Setup(_) => "config",
        }
    }

    /// Whether the message may quote text that is not Oxydra's own (a provider's or an
    /// MCP server's answer, a file's content, a value given on the command line), and so
    /// must be scrubbed of secrets before it is shown. Messages made only of our own
    /// text, paths and names are shown as written: the scrubber would mistake their
    /// examples (`export OPENAI_API_KEY=sk-...`) for secrets.
    pub fn quotes_foreign_text(&self) -> bool {
        match self {
            Self::Config(oxydra_config::ConfigError::NotFound { .. })
            | Self::NoProvider
            | Self::NoLocalModel
            | Self::MissingApiKey { .. }
            | Self::UntrustedProvider { .. }
            | Self::DatabaseMissing { .. }
            | Self::NothingToContinue { .. }
            | Self::SessionNotFound { .. }
            | Self::AmbiguousSession { .. }
            | Self::Unauthenticated { .. } => false,
            Self::ReadFile { .. }
            | Self::Config(_)
            | Self::Flag { .. }
            | Self::Env { .. }
            | Self::LocalModel { .. }
            | Self::Io { .. }
            | Self::Stdio { .. }
            | Self::Memory { .. }
            | Self::Mcp(_)
            | Self::Bind { .. }
            | Self::OutputSchema { .. }
            | Self::Coordinator(_)
            | Self::Server { .. }
            | Self::Api { .. }
            | Self::Eval(_)
            | Self::Setup(_)
            | Self::Run { .. } => true,
        }
    }

    /// The exit code this error ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            Self::Config(error) if error.is_usage() => Exit::Usage,
            Self::Config(_) => Exit::Runtime,
            Self::Flag { .. }
            | Self::Env { .. }
            | Self::NoProvider
            | Self::NoLocalModel
            | Self::LocalModel { .. }
            | Self::MissingApiKey { .. }
            | Self::UntrustedProvider { .. }
            | Self::SessionNotFound { .. }
            | Self::AmbiguousSession { .. }
            | Self::NothingToContinue { .. }
            | Self::DatabaseMissing { .. }
            | Self::Mcp(_)
            | Self::Bind { .. }
            | Self::Unauthenticated { .. }
            | Self::OutputSchema { .. }
            | Self::Eval(_)
            | Self::Setup(_) => Exit::Usage,
            Self::Coordinator(_) | Self::Server { .. } => Exit::Runtime,
            Self::Api { status, .. } if *status < 500 => Exit::Usage,
            Self::Api { .. } => Exit::Runtime,
            Self::ReadFile { .. } | Self::Io { .. } | Self::Stdio { .. } | Self::Memory { .. } => {
                Exit::Runtime
            }
            Self::Run { kind, .. } => Exit::for_error_kind(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_howto_names_every_kind_of_the_table_as_it_always_read() {
        let before = format!("no provider configured. Three ways to get going:
  1. an API key:  export OPENAI_API_KEY=sk-...  (or ANTHROPIC_API_KEY=sk-ant-..., GEMINI_API_KEY=AIza...)
  2. a model server of your own (no key): --provider ollama --model llama3.2, or any
     OpenAI-compatible server (llama.cpp, vLLM, LM Studio): --base-url http://localhost:8080/v1 --model NAME
  3. a local model file, run in-process:  --provider local --model PATH.gguf
       (fetch a recommended one, about 1 GB, once: oxydra run --provider local --model hf:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf \"hi\";
        or export OXYDRA_LOCAL_MODEL=PATH.gguf, or put one at {})
  A [provider] table (kind, base_url, model, api_key_env) in ./oxydra.toml or the user config
  file sets any of these (`oxydra init` writes a commented one to start from)", default_model_path());
        assert_eq!(provider_howto(), before);
    }

    #[test]
    fn the_model_path_named_is_this_machines_not_a_placeholder() {
        let data = dirs::data_dir().unwrap();
        let path = data.join("oxydra").join("models").join("default.gguf");
        for text in [provider_howto(), local_model_howto()] {
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(!text.contains("<data dir>"), "{text}");
            assert!(text.contains(RECOMMENDED_LOCAL_MODEL), "{text}");
        }
    }

    #[test]
    fn config_errors_are_usage_errors_and_name_the_file() {
        let error = CliError::from(oxydra_config::ConfigError::UnknownKey {
            path: "/x/oxydra.toml".into(),
            key: "max_turn".into(),
            table: "in [runtime]".into(),
            expected: "max_turns, max_cost".into(),
            line: Some(3),
        });
        assert_eq!(error.exit(), Exit::Usage);
        assert_eq!(
            error.to_string(),
            "/x/oxydra.toml: unknown key `max_turn` in [runtime] (expected one of max_turns, max_cost) at line 3"
        );
        assert_eq!(CliError::NoProvider.exit(), Exit::Usage);
        assert!(CliError::NoProvider.to_string().contains("OPENAI_API_KEY"));
        let run = CliError::Run {
            kind: "budget_exceeded".into(),
            message: "max_turns".into(),
        };
        assert_eq!(run.exit(), Exit::Budget);
    }
}
