//! Merging defaults, the file, the environment and the flags (flags win) into the
//! effective configuration a run uses.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::mask::Secret;
use oxydra::tools::BuiltinToolsConfig;

use oxydra::mcp::McpServerConfig;

use super::provider_pick::merge_provider;
#[cfg(test)]
use super::provider_pick::{DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL};
use super::{AgentConfig, ApproveMode, Effort, LoadedFile, OpenAiApi, ProviderKind, ServeSection};
use crate::args::RunOptions;
use crate::error::CliError;
#[cfg(test)]
use oxydra::provider::OPENAI_BASE_URL as DEFAULT_OPENAI_URL;

/// Reads an environment variable (a function so tests need not touch the real environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The merged configuration: defaults, the file, the environment and the flags.
/// `P` is the provider: required for a run ([`Effective`]), optional for the service
/// commands ([`ServiceConfig`]). Everything else is merged the same way for both.
#[derive(Debug, Clone, Serialize)]
pub struct Merged<P> {
    /// Where the file came from (not printed as a key).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// Settings of the file ignored because it is not trusted (not printed as a key).
    #[serde(skip)]
    pub ignored: Vec<String>,
    /// The provider.
    pub provider: P,
    /// Budgets and behaviour of the loop.
    pub runtime: EffectiveRuntime,
    /// Where sessions (and runs) are stored.
    pub memory: EffectiveMemory,
    /// Tool settings.
    pub tools: BuiltinToolsConfig,
    /// Tool rules.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<super::RuleEntry>,
    /// Agent blueprints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentConfig>,
    /// MCP servers whose tools are registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// `[serve]`, used by `oxydra serve` only (not printed by `--print-config`).
    #[serde(skip)]
    pub serve: ServeSection,
    /// Prices of models the built-in table does not know.
    #[serde(skip_serializing_if = "super::Prices::is_empty")]
    pub pricing: super::Prices,
}

/// What a run uses, after merging.
pub type Effective = Merged<EffectiveProvider>;

/// What `oxydra serve`, `agents list` and `mcp list` use: the merged settings, where a
/// provider is optional (without one, deterministic agents still run).
pub type ServiceConfig = Merged<Option<EffectiveProvider>>;

/// The provider a run talks to.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveProvider {
    /// Wire format.
    pub kind: ProviderKind,
    /// Base URL.
    pub base_url: String,
    /// Model.
    pub model: String,
    /// The variable the key came from; `None`: no auth header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The key (never printed as a key: the file takes `api_key_env`).
    #[serde(skip)]
    pub api_key: Option<Secret>,
    /// `[provider] max_response_bytes`; `None`: the client's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<usize>,
    /// The OpenAI API (`--api`, `[provider] api`); `None` for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<OpenAiApi>,
    /// `--reasoning-effort`, `[provider] reasoning_effort`; `None`: the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Effort>,
    /// `--thinking-budget` / `[provider] thinking_budget`; `None`: no thinking budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// `[provider] threads` of the local model; `None`: all cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

/// Loop budgets and behaviour.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveRuntime {
    /// Most turns.
    pub max_turns: usize,
    /// Most cost (US dollars).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Most seconds per turn.
    pub turn_timeout_secs: u64,
    /// Rolling-summary trigger.
    pub summary_trigger_ratio: f64,
    /// Context window override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Output token cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// System prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// How consent is answered.
    pub approve: ApproveMode,
    /// Root of the file tools (a flag, not a file setting: printed as a comment).
    #[serde(skip)]
    pub workspace: PathBuf,
    /// Session to continue (a flag, not a file setting: printed as a comment).
    #[serde(skip)]
    pub session: Option<String>,
    /// Most seconds a run waits for a session another run is writing.
    pub session_wait_secs: f64,
}

impl EffectiveRuntime {
    /// The runtime's budgets and context settings.
    pub fn limits(&self) -> oxydra::runtime::RuntimeLimits {
        oxydra::runtime::RuntimeLimits {
            max_turns: self.max_turns,
            max_cost: self.max_cost,
            turn_timeout: std::time::Duration::from_secs(self.turn_timeout_secs),
            summary_trigger_ratio: self.summary_trigger_ratio,
            context_window: self.context_window,
            max_output_tokens: self.max_output_tokens,
            ..oxydra::runtime::RuntimeLimits::default()
        }
    }

    /// How long a run waits for a session another run is writing.
    pub fn session_wait(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.session_wait_secs)
            .unwrap_or(oxydra::runtime::DEFAULT_SESSION_WAIT)
    }
}

/// Where sessions are stored.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveMemory {
    /// SQLite file, or PostgreSQL URL (shown without its password).
    #[serde(serialize_with = "serialize_db")]
    pub db: PathBuf,
    /// Where `db` came from (`--db`, `OXYDRA_DB`, `[memory] db in …`), for messages.
    #[serde(skip)]
    pub origin: String,
    /// Retrieval on.
    pub retrieval: bool,
}

fn serialize_db<S: serde::Serializer>(db: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::commands::database::shown(db))
}

impl<P> Merged<P> {
    /// The built-in prices with the configured ones added.
    pub fn pricing_table(&self) -> oxydra::provider::PricingTable {
        super::pricing::table(&self.pricing)
    }
}

impl Effective {
    /// Refuses a cost budget (`--max-cost`, `runtime.max_cost`) for a model whose price
    /// is unknown: it could not be counted, so it would silently allow anything.
    pub fn require_known_price(&self, flags: &RunOptions) -> Result<(), CliError> {
        let model = &self.provider.model;
        if self.runtime.max_cost.is_none() || self.pricing_table().price(model).is_some() {
            return Ok(());
        }
        let message = super::pricing::unknown_price_message(model);
        Err(match &self.config_file {
            Some(path) if flags.max_cost.is_none() => CliError::ConfigInvalid {
                path: path.clone(),
                key: "runtime.max_cost".to_owned(),
                message: format!("invalid value for runtime.max_cost: {message}"),
                line: None,
            },
            _ => CliError::Flag {
                flag: "--max-cost",
                message,
            },
        })
    }
}

/// The default database: `<user data dir>/oxydra/oxydra.db`.
pub fn default_db_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("oxydra.db"))
}

/// The database to use: `--db` (relative to the current dir), else `OXYDRA_DB`, else
/// `[memory] db` (relative to the config file), else [`default_db_path`]. A
/// `postgres://` URL is kept as it is (checked here, so a malformed one is an error
/// naming where it came from).
pub fn resolve_db(
    file: &LoadedFile,
    flag: Option<&Path>,
    env: EnvLookup<'_>,
) -> Result<PathBuf, CliError> {
    if let Some(path) = flag {
        check_url(path).map_err(|message| CliError::Flag {
            flag: "--db",
            message,
        })?;
        return Ok(absolute_or_url(path));
    }
    if let Some(path) = env("OXYDRA_DB").filter(|value| !value.is_empty()) {
        let path = PathBuf::from(path);
        check_url(&path).map_err(|message| CliError::Env {
            var: "OXYDRA_DB".to_owned(),
            message,
        })?;
        return Ok(absolute_or_url(&path));
    }
    if let Some(db) = &file.config.memory.db {
        check_url(db).map_err(|message| CliError::ConfigInvalid {
            path: file.path.clone().unwrap_or_default(),
            key: "memory.db".to_owned(),
            message: format!("memory.db: {message}"),
            line: None,
        })?;
        if crate::commands::database::is_url(db) {
            return Ok(db.clone());
        }
        let base = file
            .path
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        return Ok(absolute(&base.join(db)));
    }
    default_db_path().ok_or_else(|| {
        CliError::Setup("no user data directory is known; pass --db <PATH>".to_owned())
    })
}

/// Where [`resolve_db`] took the database from, for messages: `--db`, `OXYDRA_DB`,
/// `[memory] db in <file>` or `the default`.
pub fn db_origin(file: &LoadedFile, flag: Option<&Path>, env: EnvLookup<'_>) -> String {
    if flag.is_some() {
        "--db".to_owned()
    } else if env("OXYDRA_DB").is_some_and(|value| !value.is_empty()) {
        "OXYDRA_DB".to_owned()
    } else if file.config.memory.db.is_some() {
        match &file.path {
            Some(path) => format!("[memory] db in {}", path.display()),
            None => "[memory] db".to_owned(),
        }
    } else {
        "the default".to_owned()
    }
}

/// A PostgreSQL URL that does not parse: what is wrong (the password never shown).
fn check_url(db: &Path) -> Result<(), String> {
    let Some(url) = db
        .to_str()
        .filter(|url| oxydra::postgres::is_postgres_url(url))
    else {
        return Ok(());
    };
    oxydra::postgres::validate_url(url)
        .map_err(|error| format!("{}: {error}", crate::commands::database::redact_url(url)))
}

fn absolute_or_url(path: &Path) -> PathBuf {
    if crate::commands::database::is_url(path) {
        path.to_path_buf()
    } else {
        absolute(path)
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Merges the file, the environment and the flags.
pub fn merge(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    stdin_is_terminal: bool,
) -> Result<Effective, CliError> {
    let provider = merge_provider(file, flags, env)?;
    merge_settings(file, flags, env, stdin_is_terminal, provider)
}

/// Merges like [`merge`] for the service commands: no provider is no error, and
/// consent is never asked in a terminal (`ask` becomes `never`).
pub fn merge_service(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
) -> Result<ServiceConfig, CliError> {
    let provider = match merge_provider(file, flags, env) {
        Ok(provider) => Some(provider),
        Err(CliError::NoProvider) => None,
        Err(error) => return Err(error),
    };
    merge_settings(file, flags, env, false, provider)
}

/// Everything but the provider, which is merged already.
fn merge_settings<P>(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    stdin_is_terminal: bool,
    provider: P,
) -> Result<Merged<P>, CliError> {
    let section = &file.config.runtime;

    let max_turns = flags.max_turns.or(section.max_turns).unwrap_or(8);
    if max_turns == 0 {
        return Err(CliError::Flag {
            flag: "--max-turns",
            message: "expected at least 1, found 0".into(),
        });
    }
    let max_cost = flags.max_cost.or(section.max_cost);
    if let Some(cost) = flags.max_cost
        && !(cost.is_finite() && cost > 0.0)
    {
        return Err(CliError::Flag {
            flag: "--max-cost",
            message: format!("expected a positive number, found {cost}"),
        });
    }
    let turn_timeout_secs = flags
        .turn_timeout
        .or(section.turn_timeout_secs)
        .unwrap_or(120);
    if turn_timeout_secs == 0 {
        return Err(CliError::Flag {
            flag: "--turn-timeout",
            message: "expected at least 1 second, found 0".into(),
        });
    }
    let approve = match flags.approve.or(section.approve) {
        Some(ApproveMode::Ask) | None if !stdin_is_terminal => ApproveMode::Never,
        Some(mode) => mode,
        None => ApproveMode::Ask,
    };
    let workspace = match &flags.workspace {
        Some(dir) if !dir.is_dir() => {
            return Err(CliError::Flag {
                flag: "--workspace",
                message: format!("{} is not a directory", dir.display()),
            });
        }
        Some(dir) => dir.clone(),
        None => PathBuf::from("."),
    };
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| absolute(&workspace));

    let db = resolve_db(file, flags.db.as_deref(), env)?;
    let db_origin = db_origin(file, flags.db.as_deref(), env);
    let mut tools = file.config.tools.clone();
    tools.protected = super::protected::protected_paths(file.path.as_deref(), &db);
    tools.sandbox = super::sandbox::effective(&file.config.sandbox, flags.sandbox);

    Ok(Merged {
        config_file: file.path.clone(),
        ignored: file.ignored.clone(),
        provider,
        runtime: EffectiveRuntime {
            max_turns,
            max_cost,
            turn_timeout_secs,
            summary_trigger_ratio: section.summary_trigger_ratio.unwrap_or(0.8),
            context_window: section.context_window,
            max_output_tokens: section.max_output_tokens,
            system_prompt: section.system_prompt.clone(),
            approve,
            workspace,
            session: flags.session.clone(),
            session_wait_secs: section
                .session_wait_secs
                .unwrap_or(oxydra::runtime::DEFAULT_SESSION_WAIT.as_secs_f64()),
        },
        memory: EffectiveMemory {
            db,
            origin: db_origin,
            retrieval: file.config.memory.retrieval.unwrap_or(true),
        },
        tools,
        rules: file.config.rules.clone(),
        agents: file.config.agents.clone(),
        mcp_servers: file.config.mcp_servers.clone(),
        serve: file.config.serve.clone(),
        pricing: file.config.pricing.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FileConfig;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn file(text: &str) -> LoadedFile {
        LoadedFile {
            path: Some(PathBuf::from("/etc/ox/oxydra.toml")),
            config: crate::config::file::parse(Path::new("/etc/ox/oxydra.toml"), text).unwrap(),
            ignored: Vec::new(),
        }
    }

    #[test]
    fn nothing_configured_is_no_provider() {
        let error = merge(
            &LoadedFile::default(),
            &RunOptions::default(),
            &env_of(&[]),
            true,
        )
        .unwrap_err();
        assert!(matches!(error, CliError::NoProvider));
    }

    #[test]
    fn provider_is_picked_from_the_environment() {
        let env = env_of(&[("OPENAI_API_KEY", "sk-openai-0123456789abcdef")]);
        let effective = merge(&LoadedFile::default(), &RunOptions::default(), &env, true).unwrap();
        assert_eq!(effective.provider.kind, ProviderKind::Openai);
        assert_eq!(effective.provider.model, DEFAULT_OPENAI_MODEL);
        assert_eq!(effective.provider.base_url, DEFAULT_OPENAI_URL);
        assert_eq!(
            effective.provider.api_key.as_ref().unwrap().expose(),
            "sk-openai-0123456789abcdef"
        );

        let env = env_of(&[("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdef")]);
        let effective = merge(&LoadedFile::default(), &RunOptions::default(), &env, true).unwrap();
        assert_eq!(effective.provider.kind, ProviderKind::Anthropic);
        assert_eq!(effective.provider.model, DEFAULT_ANTHROPIC_MODEL);
    }

    #[test]
    fn base_url_alone_is_an_open_server_without_auth() {
        let flags = RunOptions {
            base_url: Some("http://localhost:11434/v1/".into()),
            ..RunOptions::default()
        };
        let env = env_of(&[("OPENAI_API_KEY", "sk-must-not-leak-to-ollama")]);
        let effective = merge(&LoadedFile::default(), &flags, &env, true).unwrap();
        assert_eq!(effective.provider.kind, ProviderKind::Openai);
        assert_eq!(effective.provider.base_url, "http://localhost:11434/v1");
        assert!(effective.provider.api_key.is_none());
    }

    #[test]
    fn flags_beat_environment_beat_file() {
        let loaded = file(
            "[provider]\nkind = \"openai\"\nbase_url = \"http://file\"\nmodel = \"file-model\"\n\
             [runtime]\nmax_turns = 4\nmax_cost = 2.0\n[memory]\ndb = \"data/o.db\"\n",
        );
        let env = env_of(&[("OXYDRA_MODEL", "env-model")]);
        let effective = merge(&loaded, &RunOptions::default(), &env, true).unwrap();
        assert_eq!(effective.provider.model, "env-model");
        assert_eq!(effective.provider.base_url, "http://file");
        assert_eq!(effective.runtime.max_turns, 4);
        assert_eq!(effective.memory.db, PathBuf::from("/etc/ox/data/o.db"));

        let flags = RunOptions {
            model: Some("flag-model".into()),
            max_turns: Some(2),
            db: Some("/tmp/x.db".into()),
            ..RunOptions::default()
        };
        let effective = merge(&loaded, &flags, &env, true).unwrap();
        assert_eq!(effective.provider.model, "flag-model");
        assert_eq!(effective.runtime.max_turns, 2);
        assert_eq!(effective.runtime.max_cost, Some(2.0));
        assert_eq!(effective.memory.db, PathBuf::from("/tmp/x.db"));
    }

    #[test]
    fn named_key_variable_must_be_set() {
        let loaded = file("[provider]\napi_key_env = \"MY_KEY\"\n");
        let error = merge(&loaded, &RunOptions::default(), &env_of(&[]), true).unwrap_err();
        assert!(error.to_string().contains("MY_KEY"), "{error}");
        let env = env_of(&[("MY_KEY", "k")]);
        let effective = merge(&loaded, &RunOptions::default(), &env, true).unwrap();
        assert_eq!(effective.provider.api_key_env.as_deref(), Some("MY_KEY"));
    }

    #[test]
    fn consent_is_never_without_a_terminal_and_flags_are_checked() {
        let env = env_of(&[("OPENAI_API_KEY", "k")]);
        let effective = merge(&LoadedFile::default(), &RunOptions::default(), &env, false).unwrap();
        assert_eq!(effective.runtime.approve, ApproveMode::Never);
        let always = RunOptions {
            approve: Some(ApproveMode::Always),
            ..RunOptions::default()
        };
        let effective = merge(&LoadedFile::default(), &always, &env, false).unwrap();
        assert_eq!(effective.runtime.approve, ApproveMode::Always);

        for (flags, flag) in [
            (
                RunOptions {
                    max_cost: Some(-1.0),
                    ..RunOptions::default()
                },
                "--max-cost",
            ),
            (
                RunOptions {
                    base_url: Some("localhost:1".into()),
                    ..RunOptions::default()
                },
                "--base-url",
            ),
            (
                RunOptions {
                    workspace: Some("/nonexistent/dir".into()),
                    ..RunOptions::default()
                },
                "--workspace",
            ),
        ] {
            let error = merge(&LoadedFile::default(), &flags, &env, true).unwrap_err();
            assert!(error.to_string().contains(flag), "{error}");
        }
    }

    #[test]
    fn printed_configuration_of_a_full_file_is_valid_toml() {
        let loaded = file(
            "[provider]\nbase_url = \"https://me:pw@host/v1\"\n\
             [[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 3\n\
             [[agents]]\nname = \"crawler\"\ntype = \"deterministic\"\n\
             parameters_schema = { type = \"object\", required = [\"url\"], properties = { url = { type = \"string\" } } }\n\
             [[agents.steps]]\ntool = \"web_fetch\"\nargs = { url = \"{{url}}\" }\n",
        );
        let effective = merge(&loaded, &RunOptions::default(), &env_of(&[]), true).unwrap();
        let text = effective.to_masked_toml();
        assert!(text.contains("/etc/ox/oxydra.toml"), "{text}");
        assert!(text.contains("https://me:****@host/v1"), "{text}");
        assert!(!text.contains(":pw@"), "{text}");
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(
            table["agents"][0]["steps"][0]["args"]["url"].as_str(),
            Some("{{url}}")
        );
        assert_eq!(table["rules"][0]["value"].as_integer(), Some(3));
    }

    #[test]
    fn printed_configuration_masks_the_key() {
        let env = env_of(&[("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop1234")]);
        let effective = merge(
            &LoadedFile {
                path: None,
                config: FileConfig::default(),
                ignored: Vec::new(),
            },
            &RunOptions::default(),
            &env,
            true,
        )
        .unwrap();
        let text = effective.to_masked_toml();
        assert!(text.contains("# api key: sk-****1234"), "{text}");
        let table: toml::Table = text.parse().unwrap();
        assert!(table["provider"].get("api_key").is_none(), "{text}");
        assert!(!text.contains("abcdefghijklmnop"));
        assert!(text.contains("max_turns = 8"));
        assert!(text.contains("[memory]"));
    }
}
