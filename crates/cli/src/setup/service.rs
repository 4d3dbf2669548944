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
use oxydra::provider::Provider;
use oxydra::tools::ToolRegistry;

use crate::args::RunOptions;
use crate::config::{self, ApproveMode, EffectiveProvider, ProviderKind, ServiceConfig};
use crate::error::CliError;

use super::database::{MemoryStore, storage_error};
use super::provider;

/// How a service answers consent requests. Nobody sits at a terminal for an HTTP run:
/// `always` grants, `never` denies, and `ask` defers, so the run waits
/// (`waiting_approval`) for a decision through the API for `[serve] approval_ttl_secs`.
fn broker(settings: &ServiceConfig) -> Arc<dyn PermissionBroker> {
    match settings.approve() {
        ApproveMode::Allow => Arc::new(AlwaysApprove),
        ApproveMode::Deny => Arc::new(AlwaysDeny),
        ApproveMode::Ask => Arc::new(DeferAll::new(settings.serve.approval_ttl())),
    }
}

/// Whether runs of this service can wait for a person's decision (`approve = "ask"`).
pub fn approvals_wait(settings: &ServiceConfig) -> bool {
    settings.approve() == ApproveMode::Ask
}

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
/// [`config::auth_token`]) every request must carry it.
pub async fn start(
    settings: &ServiceConfig,
    purpose: Purpose,
    auth_token: Option<String>,
) -> Result<Service, CliError> {
    // Built before the MCP servers start, so a model that fails to load leaves
    // nothing running.
    let providers = providers(settings).await?;
    config::sandbox::report_support(&settings.tools.sandbox);
    let mut tools = ToolRegistry::with_builtins(&settings.tools);
    let servers = super::launch::mcp_servers(
        &settings.mcp_servers,
        settings.config_file.as_deref(),
        &settings.secret_handles,
    )?;
    let mcp = super::mcp::start(&servers, &mut tools).await?;
    let mut deps = runner_deps(settings, purpose, tools, providers);
    let runs = match purpose {
        Purpose::Serve => match open_stores(settings).await {
            Ok((memory, runs)) => {
                // Each run's turns that change the workspace record checkpoints in the
                // same database, as `oxydra run` does (`GET /runs/{id}/changes`).
                let checkpoints: Arc<dyn oxydra::memory::CheckpointStore> = memory.clone();
                deps = deps.with_checkpoints(checkpoints, settings.checkpoints.clone());
                let memory: Arc<dyn Memory> = memory;
                deps.memory = Some(memory);
                Some(runs)
            }
            Err(error) => {
                super::mcp::stop(mcp).await;
                return Err(error);
            }
        },
        Purpose::List => None,
    };
    let coordinator_config = CoordinatorConfig {
        db: match purpose {
            Purpose::Serve => settings
                .memory
                .db
                .sqlite_path()
                .map(std::path::Path::to_path_buf),
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
            Err(coordinator_error(settings, error))
        }
    }
}

/// The clients of the service: the configured provider (the default, and the named
/// provider of its kind), then each other kind the environment gave a key for, each
/// built once.
async fn providers(settings: &ServiceConfig) -> Result<Providers, CliError> {
    let limits = &settings.runtime.limits;
    let default = match &settings.provider {
        Some(configured) => Some((
            configured.clone(),
            provider::build(configured, limits).await?,
        )),
        None => None,
    };
    let mut named = Vec::new();
    for other in &settings.named_providers {
        named.push((other.kind, provider::build(other, limits).await?));
    }
    Ok(Providers { default, named })
}

/// The clients [`providers`] built.
struct Providers {
    default: Option<(EffectiveProvider, Arc<dyn Provider>)>,
    named: Vec<(ProviderKind, Arc<dyn Provider>)>,
}

/// What every runner of the coordinator shares: the tools, rules, consent, hooks (for
/// `serve`), limits and providers.
fn runner_deps(
    settings: &ServiceConfig,
    purpose: Purpose,
    tools: ToolRegistry,
    providers: Providers,
) -> RunnerDeps {
    let mut deps = RunnerDeps::new(tools, settings.workspace.clone());
    deps.rules = settings.rules.clone();
    deps.executor_config = ToolExecutorConfig::default();
    deps.permission_broker = Some(broker(settings));
    if purpose == Purpose::Serve {
        // The trusted configuration's `[[hooks]]` run around every run's model
        // requests and tool calls, as they do for `oxydra run`.
        deps.hooks = super::hooks::from_config(settings);
    }
    deps.limits = settings.runtime.limits.clone();
    // `{{secret:NAME}}` in agents' calls; their values are scrubbed by value too.
    deps = deps.with_secret_handles(settings.secret_handles.clone());
    // `[provenance]`: what a run read holds its side effects for a person, as in `run`.
    deps = deps.with_provenance_policy(settings.provenance.policy());
    // The keys the service holds, redacted by value from what its runs send and store.
    let held = crate::config::searchable(&settings.held_secrets);
    if !held.is_empty() {
        match oxydra::scrubbing::Scrubber::new().with_known_secrets(held) {
            Ok(scrubber) => deps = deps.with_scrubber(scrubber),
            // `searchable` keeps only values long enough to be searched; a set too
            // large to compile leaves the pattern scrubber, said once.
            Err(error) => tracing::warn!(%error, "held secrets are not scrubbed by value"),
        }
    }
    // `[pricing]` counts agents' costs; a cost budget on a model without a price is
    // refused when the blueprints load.
    deps.pricing = Some(settings.pricing_table());
    if let Some((configured, client)) = providers.default {
        deps = deps
            .with_provider(Arc::clone(&client), configured.model.clone())
            .with_named_provider(configured.kind.as_str(), client);
    }
    for (kind, client) in providers.named {
        deps = deps.with_named_provider(kind.as_str(), client);
    }
    deps
}

/// The service's memory (with its checkpoints) and runs, opened together: on a server they share one
/// connection pool, and any number of `oxydra serve` processes share the database.
async fn open_stores(
    settings: &ServiceConfig,
) -> Result<(Arc<dyn MemoryStore>, Arc<dyn RunStore>), CliError> {
    let db = &settings.memory.db;
    let stores = oxydra::storage::open_service_with(db, settings.memory.store_options())
        .await
        .map_err(|error| storage_error(db, &settings.memory.origin, error))?;
    Ok((stores.memory, stores.runs))
}

/// A coordinator that would not start, as the CLI's error: a refused blueprint is a
/// configuration error naming the file.
fn coordinator_error(settings: &ServiceConfig, error: CoordinatorError) -> CliError {
    let at = settings
        .config_file
        .as_ref()
        .map_or_else(String::new, |path| format!("{}: ", path.display()));
    match error {
        CoordinatorError::InvalidConfig { .. }
        | CoordinatorError::InvalidBlueprint { .. }
        | CoordinatorError::InvalidSchema { .. }
        | CoordinatorError::InvalidStep { .. }
        | CoordinatorError::DuplicateBlueprint { .. }
        | CoordinatorError::UnknownTool { .. }
        | CoordinatorError::UndeclaredPrivilegedTool { .. }
        | CoordinatorError::ProviderUnavailable { .. }
        | CoordinatorError::UnpricedModel { .. } => {
            CliError::Setup(format!("{at}[[agents]]: {error}"))
        }
        CoordinatorError::Storage { .. } | CoordinatorError::CorruptRow { .. } => {
            CliError::Memory {
                path: settings.memory.db.shown_path(),
                message: error.to_string(),
            }
        }
        other => CliError::Coordinator(other.to_string()),
    }
}
