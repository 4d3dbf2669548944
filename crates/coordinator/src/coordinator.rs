//! The coordinator: loaded blueprints, the run store and the worker pool, behind the
//! operations the HTTP API and the agent tools share.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_tools::{Tool, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_tools::{AgentRuns, agent_tools, api_error, to_value};
use crate::blueprint::{Blueprint, BlueprintSummary};
use crate::claim_source::SharedSettings;
use crate::config::{BlueprintConfig, CoordinatorConfig};
use crate::error::CoordinatorError;
use crate::queue::RunQueue;
use crate::run::{Run, RunError, RunStatus};
use crate::run_tree::{RunTrees, TreeScoped};
use crate::runners::{RunExecutor, RunnerDeps};
use crate::store::RunStore;

/// What `POST /runs` and `start_agent_run` answer: the new run's id and status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunCreated {
    /// The run's id.
    pub run_id: String,
    /// Its status (`pending`).
    pub status: RunStatus,
}

/// The `{"agents": [...]}` listing of `GET /agents` and `list_agent_blueprints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentListing {
    /// Every blueprint.
    pub agents: Vec<BlueprintSummary>,
}

pub(crate) struct Inner {
    pub(crate) config: CoordinatorConfig,
    order: Vec<Arc<Blueprint>>,
    pub(crate) by_name: HashMap<String, Arc<Blueprint>>,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) queue: RunQueue,
    trees: Arc<RunTrees>,
    /// Where a person's views read the workspace and the runs' conversations.
    pub(crate) view: OnceLock<crate::person_view::PersonView>,
    /// The web console's one-time login codes (`POST /console/login`).
    pub(crate) login: Arc<crate::login_codes::LoginCodes>,
}

/// Agent blueprints, validated runs and their worker pool. Cheap to clone.
///
/// Build one with [`Coordinator::new`] (real runners from [`RunnerDeps`]) or
/// [`Coordinator::with_executor`] (any [`RunExecutor`]); serve it with
/// [`Coordinator::serve`] or mount [`Coordinator::router`] yourself.
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("blueprints", &self.inner.by_name.len())
            .finish_non_exhaustive()
    }
}

/// A weak handle on a coordinator, held by the agent tools (so tools registered in
/// the coordinator's own runners do not keep it alive forever).
#[derive(Clone, Default)]
pub struct CoordinatorHandle {
    cell: Arc<OnceLock<Weak<Inner>>>,
}

impl std::fmt::Debug for CoordinatorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorHandle")
            .field("live", &self.upgrade().is_some())
            .finish()
    }
}

impl CoordinatorHandle {
    /// The coordinator, while it is alive.
    pub fn upgrade(&self) -> Option<Coordinator> {
        self.cell
            .get()
            .and_then(Weak::upgrade)
            .map(|inner| Coordinator { inner })
    }
}

impl CoordinatorHandle {
    /// The coordinator, or the tool error of one that has shut down.
    fn live(&self) -> Result<Coordinator, ToolError> {
        self.upgrade()
            .ok_or_else(|| ToolError::Failed("the coordinator has shut down".into()))
    }
}

#[async_trait]
impl AgentRuns for CoordinatorHandle {
    async fn list_blueprints(&self) -> Result<Value, ToolError> {
        to_value(self.live()?.list_blueprints().await.map_err(api_error)?)
    }

    async fn create_run(&self, agent_name: &str, parameters: Value) -> Result<Value, ToolError> {
        let created = self
            .live()?
            .create_run(agent_name, parameters)
            .await
            .map_err(api_error)?;
        to_value(created)
    }

    async fn wait_for_run(&self, run_id: &str, wait: Duration) -> Result<Value, ToolError> {
        let run = self
            .live()?
            .wait_for_run(run_id, wait)
            .await
            .map_err(api_error)?;
        to_value(run)
    }
}

impl Coordinator {
    /// The agent tools, bound to this coordinator (register them for an orchestrating
    /// agent).
    pub fn agent_tools(&self) -> Vec<Arc<dyn Tool>> {
        agent_tools(&self.handle())
    }
}

/// The SQLite run store on `config.db` (in memory when unset).
#[cfg(feature = "sqlite")]
async fn open_default_store(
    config: &CoordinatorConfig,
) -> Result<Arc<dyn RunStore>, CoordinatorError> {
    let path = config.db.clone();
    let store = tokio::task::spawn_blocking(move || crate::SqliteRunStore::open(path.as_deref()))
        .await
        .map_err(|error| CoordinatorError::StorageTask(error.to_string()))??;
    Ok(Arc::new(store))
}

/// Without the `sqlite` feature there is no built-in store: use
/// [`Coordinator::with_store`].
#[cfg(not(feature = "sqlite"))]
async fn open_default_store(
    _config: &CoordinatorConfig,
) -> Result<Arc<dyn RunStore>, CoordinatorError> {
    Err(CoordinatorError::NoRunStore)
}

impl Coordinator {
    /// Loads `blueprints` (each checked and its validator compiled), opens the store
    /// (marking runs a previous process left pending or running as failed with kind
    /// `interrupted`), stores the blueprints and starts the worker pool with the real
    /// runners built from `deps`.
    pub async fn new(
        config: CoordinatorConfig,
        blueprints: Vec<BlueprintConfig>,
        deps: RunnerDeps,
    ) -> Result<Self, CoordinatorError> {
        let loaded = load_blueprints(blueprints)?;
        let handle = CoordinatorHandle::default();
        let (deps, default_max_cost) = metered(deps);
        let view = crate::person_view::PersonView::new(
            deps.workspace_root.clone(),
            deps.memory.clone(),
            deps.checkpoints.as_ref(),
            &deps.scrubber,
        );
        let runner = deps.into_runner(&loaded, agent_tools(&handle))?;
        Self::assemble(
            config,
            loaded,
            Arc::new(runner),
            handle,
            None,
            default_max_cost,
        )
        .await
        .map(|coordinator| coordinator.with_view(view))
    }

    /// Like [`Coordinator::new`], with the executor `make_executor` builds (it receives
    /// a handle on the coordinator being built).
    pub async fn with_executor<F>(
        config: CoordinatorConfig,
        blueprints: Vec<BlueprintConfig>,
        make_executor: F,
    ) -> Result<Self, CoordinatorError>
    where
        F: FnOnce(CoordinatorHandle) -> Arc<dyn RunExecutor>,
    {
        let loaded = load_blueprints(blueprints)?;
        let handle = CoordinatorHandle::default();
        let executor = make_executor(handle.clone());
        Self::assemble(config, loaded, executor, handle, None, None).await
    }

    /// Like [`Coordinator::new`] (real runners from `deps`), keeping blueprints and
    /// runs in `store` (any [`RunStore`] backend) instead of the SQLite database of
    /// `config.db`.
    pub async fn with_deps_and_store(
        config: CoordinatorConfig,
        blueprints: Vec<BlueprintConfig>,
        deps: RunnerDeps,
        store: Arc<dyn RunStore>,
    ) -> Result<Self, CoordinatorError> {
        let loaded = load_blueprints(blueprints)?;
        let handle = CoordinatorHandle::default();
        let (deps, default_max_cost) = metered(deps);
        let view = crate::person_view::PersonView::new(
            deps.workspace_root.clone(),
            deps.memory.clone(),
            deps.checkpoints.as_ref(),
            &deps.scrubber,
        );
        let runner = deps.into_runner(&loaded, agent_tools(&handle))?;
        Self::assemble(
            config,
            loaded,
            Arc::new(runner),
            handle,
            Some(store),
            default_max_cost,
        )
        .await
        .map(|coordinator| coordinator.with_view(view))
    }

    /// Like [`Coordinator::with_executor`], keeping blueprints and runs in `store` (any
    /// [`RunStore`] backend) instead of the SQLite database of `config.db`.
    pub async fn with_store<F>(
        config: CoordinatorConfig,
        blueprints: Vec<BlueprintConfig>,
        store: Arc<dyn RunStore>,
        make_executor: F,
    ) -> Result<Self, CoordinatorError>
    where
        F: FnOnce(CoordinatorHandle) -> Arc<dyn RunExecutor>,
    {
        let loaded = load_blueprints(blueprints)?;
        let handle = CoordinatorHandle::default();
        let executor = make_executor(handle.clone());
        Self::assemble(config, loaded, executor, handle, Some(store), None).await
    }

    async fn assemble(
        config: CoordinatorConfig,
        loaded: Vec<Arc<Blueprint>>,
        executor: Arc<dyn RunExecutor>,
        handle: CoordinatorHandle,
        store: Option<Arc<dyn RunStore>>,
        default_max_cost: Option<f64>,
    ) -> Result<Self, CoordinatorError> {
        config.validate()?;
        let store = match store {
            Some(store) => store,
            None => open_default_store(&config).await?,
        };
        let shared_queue = store.shared_queue();
        // On a shared store the runs left unfinished belong to other processes (or are
        // taken over when their claims lapse): nothing to recover.
        if shared_queue.is_none() {
            let recovered = store.recover_interrupted().await?;
            if recovered > 0 {
                tracing::warn!(
                    runs = recovered,
                    "marked runs left unfinished by a previous coordinator as failed (interrupted)"
                );
            }
        }
        store
            .replace_blueprints(loaded.iter().map(|blueprint| blueprint.summary()).collect())
            .await?;
        let by_name: HashMap<String, Arc<Blueprint>> = loaded
            .iter()
            .map(|blueprint| (blueprint.name().to_owned(), Arc::clone(blueprint)))
            .collect();
        let shared = shared_queue.map(|queue| SharedSettings {
            queue,
            blueprints: by_name.clone(),
            ttl: config.run_lease_ttl(),
            wake: Arc::new(tokio::sync::Notify::new()),
        });
        let trees = Arc::new(RunTrees::new(
            Arc::clone(&store),
            by_name.clone(),
            default_max_cost,
            config.max_run_depth,
            config.max_runs_per_root,
        ));
        let executor: Arc<dyn RunExecutor> =
            Arc::new(TreeScoped::new(executor, Arc::clone(&trees)));
        let queue = RunQueue::new(store.clone(), executor, config.max_concurrent_runs, shared);
        let login = Arc::new(crate::login_codes::LoginCodes::new(
            config.auth_token.clone(),
        ));
        let inner = Arc::new(Inner {
            login,
            config,
            order: loaded,
            by_name,
            store,
            queue,
            trees,
            view: OnceLock::new(),
        });
        let _ = handle.cell.set(Arc::downgrade(&inner));
        let weak = Arc::downgrade(&inner);
        crate::approval_sweep::spawn(
            inner.config.approval_sweep(),
            inner.queue.shutdown_token(),
            move || {
                weak.upgrade()
                    .map(|inner| async move { Self { inner }.expire_approvals().await })
            },
        );
        Ok(Self { inner })
    }

    /// The coordinator's settings.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.inner.config
    }

    /// A new one-time code for the web console's login URL
    /// (`http://HOST:PORT/#login=CODE`): traded once, within
    /// [`LOGIN_CODE_TTL`](crate::LOGIN_CODE_TTL), for the bearer token by `POST
    /// /console/login`. `None` without a token (the console then needs no login).
    /// Show it to the person only: it is as good as the token until used.
    pub fn console_login_code(&self) -> Option<String> {
        self.inner.login.issue()
    }

    /// A weak handle on this coordinator.
    pub fn handle(&self) -> CoordinatorHandle {
        let handle = CoordinatorHandle::default();
        let _ = handle.cell.set(Arc::downgrade(&self.inner));
        handle
    }

    /// The loaded blueprints, in config order.
    pub fn blueprints(&self) -> &[Arc<Blueprint>] {
        &self.inner.order
    }

    /// The blueprint named `name`.
    pub fn blueprint(&self, name: &str) -> Option<&Arc<Blueprint>> {
        self.inner.by_name.get(name)
    }

    /// The blueprints as stored in the database (what `GET /agents` lists).
    pub async fn list_blueprints(&self) -> Result<AgentListing, CoordinatorError> {
        Ok(AgentListing {
            agents: self.inner.store.list_blueprints().await?,
        })
    }

    /// Validates `parameters` against `agent_name`'s schema, stores a pending run and
    /// queues it. Unknown agent: [`CoordinatorError::AgentNotFound`]; invalid
    /// parameters: [`CoordinatorError::InvalidParameters`] with the `parameter_validation_failed` body.
    ///
    /// Called while a run executes (its `start_agent_run` tool, or code its executor
    /// runs), the new run is a child in that run's tree, refused with
    /// [`CoordinatorError::RunTreeLimit`] when a bound of the tree says so.
    pub async fn create_run(
        &self,
        agent_name: &str,
        parameters: Value,
    ) -> Result<RunCreated, CoordinatorError> {
        if self.inner.queue.is_shutting_down() {
            return Err(CoordinatorError::ShuttingDown);
        }
        let blueprint =
            self.blueprint(agent_name)
                .cloned()
                .ok_or_else(|| CoordinatorError::AgentNotFound {
                    name: agent_name.to_owned(),
                    available: self
                        .inner
                        .order
                        .iter()
                        .map(|blueprint| blueprint.name().to_owned())
                        .collect(),
                })?;
        blueprint
            .validate(&parameters)
            .map_err(CoordinatorError::InvalidParameters)?;
        let run_id = crate::run::new_run_id();
        let lineage = self
            .inner
            .trees
            .lineage_for(run_id.as_str(), &blueprint)
            .await?;
        let run = Run::pending(run_id.as_str(), agent_name, parameters, lineage);
        self.inner.store.insert_run(run).await?;
        let created = RunCreated {
            run_id: run_id.as_str().to_owned(),
            status: RunStatus::Pending,
        };
        if let Err(error) = self.inner.queue.enqueue(run_id, blueprint) {
            // Shutdown began after the check above: the run will never be taken.
            self.inner
                .store
                .finish_run(
                    &created.run_id,
                    RunStatus::Failed,
                    None,
                    Some(RunError::interrupted()),
                )
                .await?;
            return Err(error);
        }
        Ok(created)
    }

    /// The run `run_id`; a run `waiting_approval` with its `pending_approvals`.
    pub async fn get_run(&self, run_id: &str) -> Result<Run, CoordinatorError> {
        let mut run = self.inner.store.get_run(run_id).await?.ok_or_else(|| {
            CoordinatorError::RunNotFound {
                run_id: run_id.to_owned(),
            }
        })?;
        if run.status == RunStatus::WaitingApproval {
            run.pending_approvals = self.inner.store.pending_approvals(run_id).await?;
        }
        Ok(run)
    }

    /// Waits up to `wait` for run `run_id` to end (or to stop and wait for a person's
    /// approval: `waiting_approval`), then returns it as it is.
    pub async fn wait_for_run(
        &self,
        run_id: &str,
        wait: Duration,
    ) -> Result<Run, CoordinatorError> {
        self.inner.queue.wait(run_id, wait).await;
        self.get_run(run_id).await
    }

    /// Cancels run `run_id`: a pending run (or one waiting for approval) ends
    /// `cancelled` at once; a running one is signalled and awaited up to
    /// `cancel_wait_ms`. An ended run cannot be cancelled.
    pub async fn cancel_run(&self, run_id: &str) -> Result<Run, CoordinatorError> {
        let run = self.get_run(run_id).await?;
        if run.status.is_terminal() {
            return Err(CoordinatorError::NotCancellable {
                run_id: run.run_id,
                status: run.status,
            });
        }
        let wait = self.inner.config.cancel_wait();
        self.inner.queue.cancel(run_id, wait).await?;
        self.get_run(run_id).await
    }

    /// Stops accepting runs, cancels the active ones and waits for the workers; active
    /// and still-queued runs end `failed` with kind `interrupted`.
    pub async fn shutdown(&self) {
        self.inner.queue.shutdown().await;
    }
}

/// `deps` with every provider metered for run trees, and its default `max_cost`.
fn metered(mut deps: RunnerDeps) -> (RunnerDeps, Option<f64>) {
    deps.provider = deps.provider.map(crate::tree_meter::metered);
    deps.providers = std::mem::take(&mut deps.providers)
        .into_iter()
        .map(|(name, provider)| (name, crate::tree_meter::metered(provider)))
        .collect();
    let default_max_cost = deps.limits.max_cost;
    (deps, default_max_cost)
}

fn load_blueprints(configs: Vec<BlueprintConfig>) -> Result<Vec<Arc<Blueprint>>, CoordinatorError> {
    let mut loaded: Vec<Arc<Blueprint>> = Vec::with_capacity(configs.len());
    for config in configs {
        let blueprint = Blueprint::from_config(config)?;
        if loaded.iter().any(|other| other.name() == blueprint.name()) {
            return Err(CoordinatorError::DuplicateBlueprint {
                name: blueprint.name().to_owned(),
            });
        }
        loaded.push(Arc::new(blueprint));
    }
    Ok(loaded)
}
