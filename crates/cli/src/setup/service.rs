//! The coordinator behind `oxydra serve` and `oxydra agents list`, built from the
//! configuration: the `[[agents]]` blueprints, the built-in and MCP tools, the
//! provider of AI agents (when one is configured) and the database (opened through the
//! facade's storage table).

use std::sync::Arc;

use oxydra::coordinator::RunStore;
use oxydra::coordinator::{Coordinator, CoordinatorConfig, CoordinatorError, RunnerDeps};
use oxydra::executor::{AlwaysApprove, AlwaysDeny, DeferAll, PermissionBroker, ToolExecutorConfig};
use oxydra::mcp::McpManager;
use oxydra::memory::Memory;
use oxydra::tools::ToolRegistry;

use crate::args::RunOptions;
use crate::config::{self, ApproveMode, ProviderKind, ServiceConfig};
use crate::error::CliError;

use super::database::storage_error;
use super::provider;

/// How a service answers consent requests. Nobody sits at a terminal for an HTTP run:
/// `always` grants, `never` denies, and `ask` defers, so the run waits
/// (`waiting_approval`) for a decision through the API for `[serve] approval_ttl_secs`.
fn broker(settings: &ServiceConfig) -> Arc<dyn PermissionBroker> {
    match settings.runtime.approve {
        ApproveMode::Always => Arc::new(AlwaysApprove),
        ApproveMode::Never => Arc::new(AlwaysDeny),
        ApproveMode::Ask => Arc::new(DeferAll::new(settings.serve.approval_ttl())),
    }
}

/// Whether runs of this service can wait for a person's decision (`approve = "ask"`).
pub fn approvals_wait(settings: &ServiceConfig) -> bool {
    settings.runtime.approve == ApproveMode::Ask
}

/// The variable `oxydra serve` reads its bearer token from when `[serve]` names none.
pub const SERVE_TOKEN_VAR: &str = "OXYDRA_SERVE_TOKEN";

/// A running coordinator and the MCP servers its tools come from.
pub struct Service {
    /// The coordinator.
    pub coordinator: Coordinator,
    /// The MCP servers, if any are configured.
    pub mcp: Option<McpManager>,
}

impl Service {
    /// Stops the coordinator (active runs end `failed` / `interrupted`) and the MCP servers.
    pub async fn stop(self) {
        self.coordinator.shutdown().await;
        super::mcp::stop(self.mcp).await;
    }
}

/// Loads and merges the configuration of a service command.
pub fn settings(options: &RunOptions) -> Result<ServiceConfig, CliError> {
    let file = config::load(options.config.as_deref())?;
    let env = |name: &str| std::env::var(name).ok();
    config::merge_service(&file, options, &env)
}

/// What the coordinator is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `oxydra serve`: runs stored in the database, which recovery after a crash
    /// tidies (runs left running are marked failed / interrupted).
    Serve,
    /// `oxydra agents list`: blueprints only. The store is in memory, so listing never
    /// touches the runs of a server using the same database.
    List,
}

/// Builds the coordinator: blueprints are checked (schemas compiled, tools looked up)
/// and stored (for [`Purpose::Serve`], in the database). With `auth_token` (see
/// [`auth_token`]) every request must carry it.
pub async fn start(
    settings: &ServiceConfig,
    purpose: Purpose,
    auth_token: Option<String>,
) -> Result<Service, CliError> {
    let db = &settings.memory.db;
    // Built before the MCP servers start, so a model that fails to load leaves
    // nothing running.
    let configured_client = match &settings.provider {
        Some(configured) => Some(provider::build(configured, &settings.runtime).await?),
        None => None,
    };
    config::sandbox::report_support(&settings.tools.sandbox);
    let mut tools = ToolRegistry::with_builtins(&settings.tools);
    let servers =
        super::launch::mcp_servers(&settings.mcp_servers, settings.config_file.as_deref())?;
    let mcp = super::mcp::start(&servers, &mut tools).await?;

    let mut deps = RunnerDeps::new(tools, settings.runtime.workspace.clone());
    deps.rules = settings.rules.clone();
    deps.executor_config = ToolExecutorConfig::default();
    deps.permission_broker = Some(broker(settings));
    if purpose == Purpose::Serve {
        // The trusted configuration's `[[hooks]]` run around every run's model
        // requests and tool calls, as they do for `oxydra run`.
        deps.hooks = super::hooks::from_config(settings);
    }
    deps.limits = settings.runtime.limits();
    // The backend opens memory and runs together: on a server they share one
    // connection pool, and any number of `oxydra serve` processes share the database.
    let mut runs: Option<Arc<dyn RunStore>> = None;
    if purpose == Purpose::Serve {
        let stores =
            match oxydra::storage::open_service_with(db, settings.memory.store_options()).await {
                Ok(stores) => stores,
                Err(error) => {
                    super::mcp::stop(mcp).await;
                    return Err(storage_error(db, &settings.memory.origin, error));
                }
            };
        let memory: Arc<dyn Memory> = stores.memory;
        deps.memory = Some(memory);
        runs = Some(stores.runs);
    }
    // The configured provider's client serves as the default and as the named
    // provider of its kind: it is built once.
    let mut default = None;
    if let (Some(configured), Some(client)) = (&settings.provider, configured_client) {
        deps = deps.with_provider(Arc::clone(&client), configured.model.clone());
        default = Some((configured.kind, client));
    }
    let env = |name: &str| std::env::var(name).ok();
    for &kind in ProviderKind::all() {
        let client = match &default {
            Some((default_kind, client)) if *default_kind == kind => Some(Arc::clone(client)),
            _ => match config::public_provider(kind, &env) {
                Some(named) => Some(provider::build(&named, &settings.runtime).await?),
                None => None,
            },
        };
        if let Some(client) = client {
            deps = deps.with_named_provider(kind.as_str(), client);
        }
    }

    let coordinator_config = CoordinatorConfig {
        db: match purpose {
            Purpose::Serve => db.sqlite_path().map(std::path::Path::to_path_buf),
            Purpose::List => None,
        },
        auth_token,
        ..settings.serve.clone()
    };
    let blueprints = settings.agents.clone();
    let built = match runs {
        Some(store) => {
            Coordinator::with_deps_and_store(coordinator_config, blueprints, deps, store).await
        }
        // Blueprints only: the store is in memory.
        None => Coordinator::new(coordinator_config, blueprints, deps).await,
    };
    match built {
        Ok(coordinator) => Ok(Service { coordinator, mcp }),
        Err(error) => {
            super::mcp::stop(mcp).await;
            let at = settings
                .config_file
                .as_ref()
                .map_or_else(String::new, |path| format!("{}: ", path.display()));
            Err(match error {
                // A blueprint the coordinator refuses is a configuration error.
                CoordinatorError::InvalidConfig { .. }
                | CoordinatorError::InvalidBlueprint { .. }
                | CoordinatorError::InvalidSchema { .. }
                | CoordinatorError::InvalidStep { .. }
                | CoordinatorError::DuplicateBlueprint { .. }
                | CoordinatorError::UnknownTool { .. }
                | CoordinatorError::UndeclaredPrivilegedTool { .. }
                | CoordinatorError::ProviderUnavailable { .. } => {
                    CliError::Setup(format!("{at}[[agents]]: {error}"))
                }
                CoordinatorError::Storage { .. } | CoordinatorError::CorruptRow { .. } => {
                    CliError::Memory {
                        path: db.shown_path(),
                        message: error.to_string(),
                    }
                }
                other => CliError::Coordinator(other.to_string()),
            })
        }
    }
}

/// The bearer token: from the variable `[serve] auth_token_env` names (which must then
/// be set), else from `OXYDRA_SERVE_TOKEN`, else none. A variable that is set but empty
/// (or only whitespace) is an error naming it: it never means "no auth".
pub fn auth_token(settings: &ServiceConfig) -> Result<Option<String>, CliError> {
    let named = settings.serve.auth_token_env.as_deref();
    let var = named.unwrap_or(SERVE_TOKEN_VAR);
    let origin = || match named {
        Some(_) => format!(
            "serve.auth_token_env{}",
            settings
                .config_file
                .as_ref()
                .map_or_else(String::new, |path| format!(" in {}", path.display()))
        ),
        None => "oxydra serve".to_owned(),
    };
    match std::env::var_os(var) {
        None if named.is_none() => Ok(None),
        None => Err(CliError::Env {
            var: var.to_owned(),
            message: format!(
                "not set, but {} names it as the API's bearer token",
                origin()
            ),
        }),
        Some(value) => {
            let value = value.into_string().map_err(|_| CliError::Env {
                var: var.to_owned(),
                message: "not valid UTF-8".to_owned(),
            })?;
            let token = value.trim();
            if token.is_empty() {
                return Err(CliError::Env {
                    var: var.to_owned(),
                    message: format!(
                        "empty, but {} reads it as the API's bearer token: set a token, \
                         or unset the variable",
                        origin()
                    ),
                });
            }
            Ok(Some(token.to_owned()))
        }
    }
}
