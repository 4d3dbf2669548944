//! Merging defaults, the file, the environment and the flags (flags win) into the
//! effective configuration a run uses.

use std::path::PathBuf;

use oxydra::mcp::McpServerConfig;
use oxydra::tools::BuiltinToolsConfig;
use serde::Serialize;

pub use super::database::EffectiveMemory;
use super::database::{Database, FileDb, db_origin, resolve_db};
use super::fallbacks::merge_provider;
use super::provider_pick::{EffectiveProvider, KeyNeed};
use oxydra::coordinator::BlueprintConfig;
use oxydra::executor::ToolRule;
use oxydra_config::LoadedFile;

use oxydra::coordinator::CoordinatorConfig;
use oxydra_config::RuntimeSection;

use super::run_settings::Asked;
use super::{ApproveMode, EnvLookup};
use crate::args::{ListOptions, RunOptions};
use crate::error::CliError;

/// The merged configuration: defaults, the file, the environment and the flags.
/// `P` is the provider: required for a run ([`Effective`]), optional for the service
/// commands ([`ServiceConfig`]). Everything else is merged the same way for both.
#[derive(Debug, Clone, Serialize)]
pub struct Merged<P> {
    /// Where the file came from (not printed as a key).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// The user's own file, when the project file `config_file` was layered over it.
    #[serde(skip)]
    pub user_file: Option<PathBuf>,
    /// Settings of the file ignored because it is not trusted (not printed as a key).
    #[serde(skip)]
    pub ignored: Vec<oxydra_config::Ignored>,
    /// The provider.
    pub provider: P,
    /// `[runtime]`: the runtime's limits with the flags applied, the system prompt,
    /// the tool choice, and `approve` decided (never unset after the merge; see
    /// [`Merged::approve`]).
    pub runtime: RuntimeSection,
    /// Root of the file tools (a flag, not a file setting: printed as a comment).
    #[serde(skip)]
    pub workspace: PathBuf,
    /// Session to continue (a flag, not a file setting: printed as a comment).
    #[serde(skip)]
    pub session: Option<String>,
    /// Where sessions (and runs) are stored.
    pub memory: EffectiveMemory,
    /// Tool settings.
    pub tools: BuiltinToolsConfig,
    /// Tool rules.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ToolRule>,
    /// Agent blueprints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<BlueprintConfig>,
    /// MCP servers whose tools are registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// Hook commands, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<oxydra::executor::CommandHookConfig>,
    /// `[provenance]`: which sources hold side-effecting calls for a person.
    #[serde(skip)]
    pub provenance: oxydra_config::provenance::ProvenanceSection,
    /// `[checkpoints]`: the turns' checkpoints of the workspace.
    pub checkpoints: oxydra::tools::checkpoint::CheckpointConfig,
    /// `[serve]`, used by `oxydra serve` only (not printed by `--print-config`).
    #[serde(skip)]
    pub serve: CoordinatorConfig,
    /// Prices of models the built-in table does not know.
    #[serde(skip_serializing_if = "super::Prices::is_empty")]
    pub pricing: super::Prices,
    /// The service commands only: the providers blueprints may name besides the
    /// configured one (each kind's public API whose key variable is set).
    #[serde(skip)]
    pub named_providers: Vec<EffectiveProvider>,
    /// The secrets this configuration gives the program (provider keys, MCP headers,
    /// tokens and secret-named variables), scrubbed by value from what runs send
    /// and store.
    #[serde(skip)]
    pub held_secrets: Vec<super::HeldSecret>,
    /// `[secrets.NAME]` with their values read: `{{secret:NAME}}` in a call's
    /// arguments is replaced inside the call only.
    #[serde(skip)]
    pub secret_handles: oxydra::executor::SecretHandles,
}

/// What a run uses, after merging.
pub type Effective = Merged<EffectiveProvider>;

/// What `oxydra serve`, `agents list` and `mcp list` use: the merged settings, where a
/// provider is optional (without one, deterministic agents still run).
pub type ServiceConfig = Merged<Option<EffectiveProvider>>;

/// Where the file names the database.
fn file_db(file: &LoadedFile) -> FileDb<'_> {
    FileDb {
        db: file.config.memory.db.as_deref(),
        path: file.path.as_deref(),
    }
}

impl<P> Merged<P> {
    /// How consent is answered, as the merge decided it.
    pub fn approve(&self) -> ApproveMode {
        // The merge always sets it; unset would be the strictest answer.
        self.runtime.approve.unwrap_or(ApproveMode::Deny)
    }

    /// The built-in prices with the configured ones added.
    pub fn pricing_table(&self) -> oxydra::provider::PricingTable {
        oxydra_config::pricing_table(&self.pricing)
    }
}

impl Effective {
    /// Whether the price of the model and of each fallback model is known (built in,
    /// or `[pricing]` in a trusted file), so that a run's cost can be counted.
    pub fn price_known(&self) -> bool {
        self.unpriced().is_none()
    }

    /// The first of the model and its fallback models whose price is unknown.
    fn unpriced(&self) -> Option<&EffectiveProvider> {
        let table = self.pricing_table();
        std::iter::once(&self.provider)
            .chain(&self.provider.fallback)
            .find(|provider| table.price(&provider.model).is_none())
    }

    /// Refuses a cost budget (`--max-cost`, `runtime.max_cost`) when the price of the
    /// model or of a fallback model is unknown: it could not be counted, so it would
    /// silently allow anything.
    pub fn require_known_price(&self, flags: &RunOptions) -> Result<(), CliError> {
        if self.runtime.limits.max_cost.is_none() {
            return Ok(());
        }
        let Some(unpriced) = self.unpriced() else {
            return Ok(());
        };
        let message = oxydra_config::unknown_price_message(&unpriced.model, unpriced.kind);
        Err(match &self.config_file {
            Some(path) if flags.max_cost.is_none() => {
                CliError::Config(oxydra_config::ConfigError::Invalid {
                    path: path.clone(),
                    key: "runtime.max_cost".to_owned(),
                    message: format!("invalid value for runtime.max_cost: {message}"),
                    line: None,
                })
            }
            _ => CliError::Flag {
                flag: "--max-cost",
                message,
            },
        })
    }
}

/// Merges the file, the environment and the flags.
pub fn merge(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    stdin_is_terminal: bool,
) -> Result<Effective, CliError> {
    let provider = merge_provider(file, flags, env, KeyNeed::Required)?;
    let mut key: Vec<_> = super::held_secrets::provider_key(&provider)
        .into_iter()
        .collect();
    key.extend(super::held_secrets::fallback_keys(&provider));
    let mut merged = merge_settings(
        file,
        flags,
        env,
        Asked::Terminal(stdin_is_terminal),
        provider,
    )?;
    merged.held_secrets.extend(key);
    Ok(merged)
}

/// Merges like [`merge`] for `--print-config`: a key variable that is not set is no
/// error (the printed file says so), and no provider at all is none.
pub fn merge_for_print(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    stdin_is_terminal: bool,
) -> Result<ServiceConfig, CliError> {
    let provider = match merge_provider(file, flags, env, KeyNeed::Optional) {
        Ok(provider) => Some(provider),
        // An untrusted file's provider: the header names what was ignored.
        Err(CliError::NoProvider | CliError::UntrustedProvider { .. }) => None,
        Err(error) => return Err(error),
    };
    merge_settings(
        file,
        flags,
        env,
        Asked::Terminal(stdin_is_terminal),
        provider,
    )
}

/// Merges like [`merge`] for the service commands: no provider is no error, and
/// consent is never asked in a terminal: `ask` (set explicitly) lets a run wait for a
/// decision through the API, and unset is `never`.
pub fn merge_service(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
) -> Result<ServiceConfig, CliError> {
    let provider = match merge_provider(file, flags, env, KeyNeed::Required) {
        Ok(provider) => Some(provider),
        // Without a provider (none configured, or an untrusted file's ignored), the
        // service still runs deterministic agents and lists what it has.
        Err(CliError::NoProvider | CliError::UntrustedProvider { .. }) => None,
        Err(error) => return Err(error),
    };
    let named_providers =
        super::service::named_providers(provider.as_ref().map(|p: &EffectiveProvider| p.kind), env);
    let mut keys: Vec<_> = provider
        .iter()
        .chain(&named_providers)
        .filter_map(super::held_secrets::provider_key)
        .collect();
    keys.extend(provider.iter().flat_map(super::held_secrets::fallback_keys));
    let mut merged = merge_settings(file, flags, env, Asked::Later, provider)?;
    merged.named_providers = named_providers;
    merged.held_secrets.extend(keys);
    Ok(merged)
}

/// Everything but the provider, which is merged already.
fn merge_settings<P>(
    file: &LoadedFile,
    flags: &RunOptions,
    env: EnvLookup<'_>,
    asked: Asked,
    provider: P,
) -> Result<Merged<P>, CliError> {
    let runtime = super::run_settings::runtime(&file.config.runtime, flags, asked)?;
    let workspace = super::run_settings::workspace(flags)?;

    let db = resolve_db(file_db(file), flags.db.as_deref(), env)?;
    let db_origin = db_origin(file_db(file), flags.db.as_deref(), env);
    let mut tools = file.config.tools.clone();
    tools.protected = super::protected::protected_paths(file.path.as_deref(), &file.config, &db);
    tools.sandbox = oxydra_config::sandbox::effective(&file.config.sandbox, flags.sandbox);
    let mut key_variables = oxydra_config::sandbox::key_variables(&file.config.provider);
    if let Some(name) = flags.api_key_env.as_deref() {
        key_variables.push(oxydra_config::sandbox::KeyVariable {
            name,
            named_by: "--api-key-env".to_owned(),
        });
    }
    if let Some(passed) =
        oxydra_config::sandbox::provider_key_passed(&tools.sandbox.pass_env, &key_variables)
    {
        return Err(CliError::Config(oxydra_config::ConfigError::Invalid {
            path: file.path.clone().unwrap_or_default(),
            key: "sandbox.pass_env".to_owned(),
            message: format!(
                "sandbox.pass_env names `{}`, a provider's key ({}): commands never get a \
                 provider key (give a command a credential of its own)",
                passed.name, passed.named_by
            ),
            line: None,
        }));
    }

    Ok(Merged {
        config_file: file.path.clone(),
        user_file: file.user_file.clone(),
        ignored: file.ignored.clone(),
        provider,
        runtime,
        workspace,
        session: flags.session.clone(),
        memory: EffectiveMemory {
            db,
            origin: db_origin,
            retrieval: file.config.memory.retrieval.unwrap_or(true),
            max_message_bytes: file
                .config
                .memory
                .max_message_bytes
                .unwrap_or(oxydra::memory::DEFAULT_MAX_MESSAGE_BYTES),
        },
        tools,
        rules: file.config.rules.clone(),
        agents: file.config.agents.clone(),
        mcp_servers: file.config.mcp_servers.clone(),
        hooks: file.config.hooks.clone(),
        provenance: file.config.provenance.clone(),
        checkpoints: file.config.checkpoints.clone(),
        serve: file.config.serve.clone(),
        pricing: file.config.pricing.clone(),
        named_providers: Vec::new(),
        held_secrets: super::held_secrets::mcp_secrets(&file.config.mcp_servers, env),
        secret_handles: super::held_secrets::file_secret_handles(file, env)?,
    })
}

/// The provider a run with no flags would use now: the user's own file (if any) and
/// the environment; `None` when there is none. A key variable that is not set does not
/// matter here (the provider is what `oxydra init` writes down).
pub fn current_provider(env: EnvLookup<'_>) -> Option<EffectiveProvider> {
    let user = oxydra_config::user_config_path().filter(|path| path.is_file());
    let file = oxydra_config::load_layers(None, user.as_deref(), None)
        .map(|(file, _)| file)
        .unwrap_or_default();
    merge_provider(&file, &RunOptions::default(), env, KeyNeed::Optional).ok()
}

/// The database the listing commands (`sessions`, `agents list`) read, and where it
/// was named: `--db`, `OXYDRA_DB`, the file's `[memory] db` or the default.
pub fn resolve_database(options: &ListOptions) -> Result<(Database, String), CliError> {
    let file = super::load(options.config.as_deref())?;
    let env = |name: &str| std::env::var(name).ok();
    let db = resolve_db(file_db(&file), options.db.as_deref(), &env)?;
    let origin = db_origin(file_db(&file), options.db.as_deref(), &env);
    Ok((db, origin))
}

/// What `oxydra undo` and `oxydra sessions rewind | fork | diff` take from the
/// configuration besides the database: `[checkpoints]`, how long to wait for a session
/// a run holds (`[runtime] session_wait_secs`), and the file they came from.
#[derive(Debug, Clone)]
pub struct CheckpointSettings {
    /// `[checkpoints]`.
    pub checkpoints: oxydra::tools::checkpoint::CheckpointConfig,
    /// `[runtime] session_wait_secs` (the runtime's default when unset).
    pub session_wait: std::time::Duration,
    /// The configuration file read, if any.
    pub file: Option<std::path::PathBuf>,
}

/// The database `options` name, where it was named, and the checkpoint settings of
/// the configuration (see [`CheckpointSettings`]).
pub fn resolve_checkpoints(
    options: &ListOptions,
) -> Result<(Database, String, CheckpointSettings), CliError> {
    let file = super::load(options.config.as_deref())?;
    let env = |name: &str| std::env::var(name).ok();
    let db = resolve_db(file_db(&file), options.db.as_deref(), &env)?;
    let origin = db_origin(file_db(&file), options.db.as_deref(), &env);
    let settings = CheckpointSettings {
        checkpoints: file.config.checkpoints.clone(),
        session_wait: file.config.runtime.session_wait(),
        file: file.path.clone(),
    };
    Ok((db, origin, settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FileConfig, ProviderKind};
    use oxydra::provider::OPENAI_BASE_URL as DEFAULT_OPENAI_URL;
    use std::collections::HashMap;

    const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
    const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

    fn kind(name: &str) -> ProviderKind {
        ProviderKind::from_name(name).unwrap()
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    use crate::config::test_file as file;

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
        assert_eq!(effective.provider.kind, kind("openai"));
        assert_eq!(effective.provider.model, DEFAULT_OPENAI_MODEL);
        assert_eq!(effective.provider.base_url, DEFAULT_OPENAI_URL);
        assert_eq!(
            effective.provider.api_key.as_ref().unwrap().expose(),
            "sk-openai-0123456789abcdef"
        );
        // Held by the program, so scrubbed by value from what runs send and store.
        assert_eq!(
            crate::config::searchable(&effective.held_secrets),
            [(
                "OPENAI_API_KEY".to_owned(),
                "sk-openai-0123456789abcdef".to_owned()
            )]
        );

        let env = env_of(&[("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdef")]);
        let effective = merge(&LoadedFile::default(), &RunOptions::default(), &env, true).unwrap();
        assert_eq!(effective.provider.kind, kind("anthropic"));
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
        assert_eq!(effective.provider.kind, kind("openai"));
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
        assert_eq!(effective.runtime.limits.max_turns, 4);
        assert_eq!(
            effective.memory.db,
            Database::Sqlite(PathBuf::from("/etc/ox/data/o.db"))
        );

        let flags = RunOptions {
            model: Some("flag-model".into()),
            max_turns: Some(2),
            db: Some("/tmp/x.db".into()),
            ..RunOptions::default()
        };
        let effective = merge(&loaded, &flags, &env, true).unwrap();
        assert_eq!(effective.provider.model, "flag-model");
        assert_eq!(effective.runtime.limits.max_turns, 2);
        assert_eq!(effective.runtime.limits.max_cost, Some(2.0));
        assert_eq!(
            effective.memory.db,
            Database::Sqlite(PathBuf::from("/tmp/x.db"))
        );
    }

    #[test]
    fn the_message_cap_reaches_the_store_options() {
        let provider = "[provider]\nkind = \"openai\"\nbase_url = \"http://file\"\nmodel = \"m\"\n";
        let default = merge(&file(provider), &RunOptions::default(), &env_of(&[]), true).unwrap();
        assert_eq!(
            default.memory.store_options(),
            oxydra::storage::StoreOptions {
                writes_soon: true,
                ..oxydra::storage::StoreOptions::default()
            }
        );
        assert_eq!(
            default.memory.max_message_bytes,
            oxydra::memory::DEFAULT_MAX_MESSAGE_BYTES
        );
        let loaded = file(&format!("{provider}[memory]\nmax_message_bytes = 4096\n"));
        let effective = merge(&loaded, &RunOptions::default(), &env_of(&[]), true).unwrap();
        assert_eq!(effective.memory.store_options().max_message_bytes, 4096);
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
        assert_eq!(effective.approve(), ApproveMode::Deny);
        let always = RunOptions {
            approve: Some(ApproveMode::Allow),
            ..RunOptions::default()
        };
        let effective = merge(&LoadedFile::default(), &always, &env, false).unwrap();
        assert_eq!(effective.approve(), ApproveMode::Allow);
        // A service has no terminal but waits for a decision over its API: unset is
        // `ask`, and an explicit `never` or `always` holds.
        let service = |flags: &RunOptions, loaded: &LoadedFile| {
            merge_service(loaded, flags, &env).unwrap().approve()
        };
        assert_eq!(
            service(&RunOptions::default(), &LoadedFile::default()),
            ApproveMode::Ask
        );
        let never = RunOptions {
            approve: Some(ApproveMode::Deny),
            ..RunOptions::default()
        };
        assert_eq!(service(&never, &LoadedFile::default()), ApproveMode::Deny);
        let asked = file("[runtime]\napprove = \"ask\"\n");
        assert_eq!(service(&RunOptions::default(), &asked), ApproveMode::Ask);
        assert_eq!(service(&always, &asked), ApproveMode::Allow);

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
                ..LoadedFile::default()
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
