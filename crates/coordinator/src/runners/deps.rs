//! What the real runners need from the application: tools, rules, the provider(s),
//! budgets and where files live.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::{
    Hook, HookChain, PermissionBroker, ProvenancePolicy, SecretHandles, ToolExecutor,
    ToolExecutorConfig, ToolRule,
};
use oxydra_memory::Memory;
use oxydra_provider::{PricingTable, Provider};
use oxydra_runtime::RuntimeLimits;
use oxydra_scrubbing::Scrubber;
use oxydra_tools::{Tool, ToolRegistry};
use oxydra_types::SafetyTier;

use super::BlueprintRunner;
use super::agent::{AgentPlan, AgentRunner, AgentShared};
use super::deterministic::DeterministicRunner;
use crate::agent_tools::agent_tool_rules;
use crate::blueprint::{Blueprint, BlueprintBody};
use crate::error::CoordinatorError;

/// The rules of the coordinator's own tools that `registry` holds (see
/// [`agent_tool_rules`]: `get_agent_run` is never deduped).
fn polling_rules(registry: &ToolRegistry) -> Vec<ToolRule> {
    agent_tool_rules()
        .into_iter()
        .filter(|rule| registry.get(&rule.tool).is_some())
        .collect()
}

/// Checks that every tool `blueprint` names or declares is registered, and that each
/// Privileged one it names is declared in `allow_privileged`.
fn check_privileges(blueprint: &Blueprint, full: &ToolRegistry) -> Result<(), CoordinatorError> {
    let unknown = |tool: &str| CoordinatorError::UnknownTool {
        blueprint: blueprint.name().to_owned(),
        tool: tool.to_owned(),
        available: full.names().join(", "),
    };
    for tool in blueprint.allow_privileged() {
        if full.get(tool).is_none() {
            return Err(unknown(tool));
        }
    }
    for tool in blueprint.named_tools() {
        match full.tier(tool) {
            None => return Err(unknown(tool)),
            Some(SafetyTier::Privileged) if !blueprint.allows_privileged(tool) => {
                return Err(CoordinatorError::UndeclaredPrivilegedTool {
                    blueprint: blueprint.name().to_owned(),
                    tool: tool.to_owned(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Refuses an AI agent whose runs have a cost budget its `model` has no price for in
/// `pricing` (or the built-in table): the runtime would refuse every run.
fn check_priced(
    blueprint: &Blueprint,
    model: &str,
    limits: &RuntimeLimits,
    pricing: Option<&PricingTable>,
) -> Result<(), CoordinatorError> {
    let priced = match pricing {
        Some(table) => table.price(model).is_some(),
        None => PricingTable::builtin().price(model).is_some(),
    };
    if limits.max_cost.is_some() && !priced {
        return Err(CoordinatorError::UnpricedModel {
            blueprint: blueprint.name().to_owned(),
            model: model.to_owned(),
        });
    }
    Ok(())
}

/// The tools of `tools` an AI agent without a `tools` list gets: all but the
/// Privileged ones `blueprint` does not declare.
fn declared_tools(tools: &ToolRegistry, blueprint: &Blueprint) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for name in tools.names() {
        let declared =
            tools.tier(&name) != Some(SafetyTier::Privileged) || blueprint.allows_privileged(&name);
        if let Some(tool) = tools.get(&name).filter(|_| declared) {
            let _ = registry.register_arc(tool);
        }
    }
    registry
}

/// The parts [`crate::Coordinator::new`] builds its runners from.
#[derive(Clone)]
pub struct RunnerDeps {
    /// Every tool blueprints may use. The coordinator adds its own
    /// `list_agent_blueprints` / `start_agent_run` / `get_agent_run` unless present.
    pub tools: Arc<ToolRegistry>,
    /// Rules that apply to every blueprint (each blueprint may add its own).
    pub rules: Vec<ToolRule>,
    /// Executor settings (timeouts, dedupe, consent, parallelism).
    pub executor_config: ToolExecutorConfig,
    /// Who answers consent requests of AI agents' privileged tools (none: denied).
    pub permission_broker: Option<Arc<dyn PermissionBroker>>,
    /// Root directory of the file tools.
    pub workspace_root: PathBuf,
    /// The provider AI agents use unless a blueprint names another.
    pub provider: Option<Arc<dyn Provider>>,
    /// The model AI agents use unless a blueprint names another.
    pub model: Option<String>,
    /// Providers a blueprint may name with `provider = "<name>"`.
    pub providers: BTreeMap<String, Arc<dyn Provider>>,
    /// Default budgets of AI agent runs (blueprints may override some).
    pub limits: RuntimeLimits,
    /// Where AI agent runs store their conversations (none: not stored). Runs wait
    /// for approval (a broker that defers, like `DeferAll`) only with one: a waiting
    /// run resumes from its stored session.
    pub memory: Option<Arc<dyn Memory>>,
    /// Hooks around model requests and tool calls, in order: given to every AI agent
    /// run's runtime and to the executors of deterministic runs (empty: none).
    pub hooks: Vec<Arc<dyn Hook>>,
    /// What AI agent runs scrub tool output, events and stored messages with
    /// (default [`Scrubber::new`]); give one with
    /// [`Scrubber::with_known_secrets`] so the keys the service holds are redacted by
    /// value, in any encoding a command prints.
    pub scrubber: Scrubber,
    /// What `{{secret:NAME}}` stands for in AI agent runs' calls (none by default; see
    /// [`SecretHandles`]).
    pub secret_handles: SecretHandles,
    /// The prices AI agent runs count their cost with (`None`: the built-in table).
    /// An agent with a cost budget whose model has no price here is refused at load
    /// ([`CoordinatorError::UnpricedModel`]).
    pub pricing: Option<PricingTable>,
    /// Which sources AI agent runs hold side-effecting and privileged calls on for a
    /// person (DESIGN.md §3.13; default [`ProvenancePolicy::default`]: `web` and `mcp`).
    pub provenance: ProvenancePolicy,
    /// Where AI agent runs record a checkpoint of each turn that changes the workspace
    /// (DESIGN.md §3.14), for `GET /runs/{id}/changes` and `POST /runs/{id}/revert`;
    /// used with [`memory`](Self::memory) only, which should be the same database.
    /// `None` (the default): nothing is recorded and those routes answer `404
    /// changes_not_recorded`.
    pub checkpoints: Option<crate::RunCheckpoints>,
}

impl std::fmt::Debug for RunnerDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerDeps")
            .field("tools", &self.tools.names())
            .field("rules", &self.rules.len())
            .field("workspace_root", &self.workspace_root)
            .field(
                "provider",
                &self.provider.as_ref().map(|p| p.name().to_owned()),
            )
            .field("model", &self.model)
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .field(
                "hooks",
                &self
                    .hooks
                    .iter()
                    .map(|hook| hook.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl RunnerDeps {
    /// Deps with `tools` and `workspace_root`; no provider, default rules and limits.
    pub fn new(tools: impl Into<Arc<ToolRegistry>>, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            tools: tools.into(),
            rules: Vec::new(),
            executor_config: ToolExecutorConfig::default(),
            permission_broker: None,
            workspace_root: workspace_root.into(),
            provider: None,
            model: None,
            providers: BTreeMap::new(),
            limits: RuntimeLimits::default(),
            memory: None,
            hooks: Vec::new(),
            scrubber: Scrubber::new(),
            secret_handles: SecretHandles::default(),
            pricing: None,
            provenance: ProvenancePolicy::default(),
            checkpoints: None,
        }
    }

    /// Records AI agent runs' checkpoints in `store` as `config` says (see
    /// [`RunnerDeps::checkpoints`]).
    #[must_use]
    pub fn with_checkpoints(
        mut self,
        store: Arc<dyn oxydra_memory::CheckpointStore>,
        config: oxydra_tools::checkpoint::CheckpointConfig,
    ) -> Self {
        self.checkpoints = Some(crate::RunCheckpoints { store, config });
        self
    }

    /// Which sources hold AI agent runs' side-effecting and privileged calls for a
    /// person (see [`RunnerDeps::provenance`]).
    #[must_use]
    pub fn with_provenance_policy(mut self, policy: ProvenancePolicy) -> Self {
        self.provenance = policy;
        self
    }

    /// The secret handles of AI agent runs (see [`RunnerDeps::secret_handles`]); each
    /// run's runtime also scrubs their values by value.
    #[must_use]
    pub fn with_secret_handles(mut self, handles: SecretHandles) -> Self {
        self.secret_handles = handles;
        self
    }

    /// The scrubber of AI agent runs (see [`RunnerDeps::scrubber`]).
    pub fn with_scrubber(mut self, scrubber: Scrubber) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// The prices AI agent runs count their cost with (see [`RunnerDeps::pricing`]).
    #[must_use]
    pub fn with_pricing(mut self, pricing: PricingTable) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// Adds `hook` after the hooks already given.
    pub fn with_hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// The default provider and model of AI agents.
    pub fn with_provider(mut self, provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        self.provider = Some(provider);
        self.model = Some(model.into());
        self
    }

    /// A provider blueprints can name.
    pub fn with_named_provider(
        mut self,
        name: impl Into<String>,
        provider: Arc<dyn Provider>,
    ) -> Self {
        self.providers.insert(name.into(), provider);
        self
    }

    /// Builds the runners for `blueprints`, checking every tool they name exists; the
    /// coordinator's own `agent_tools` are added where no tool of the name is.
    pub(crate) fn into_runner(
        self,
        blueprints: &[Arc<Blueprint>],
        agent_tools: Vec<Arc<dyn Tool>>,
    ) -> Result<BlueprintRunner, CoordinatorError> {
        let mut full = (*self.tools).clone();
        for tool in agent_tools {
            if full.get(&tool.schema().name).is_none() {
                // The name was just checked to be free, so this cannot fail.
                let _ = full.register_arc(tool);
            }
        }
        let full = Arc::new(full);
        let mut executors = HashMap::new();
        let mut plans = HashMap::new();
        for blueprint in blueprints {
            check_privileges(blueprint, &full)?;
            let mut rules = self.rules.clone();
            rules.extend(blueprint.rules().iter().cloned());
            match blueprint.body() {
                BlueprintBody::Deterministic(_) => {
                    rules.extend(polling_rules(&full));
                    // The same consent as AI agents: a step's arguments come from
                    // whoever started the run, not from whoever wrote the blueprint.
                    let mut executor =
                        ToolExecutor::new(Arc::clone(&full), rules, self.executor_config.clone());
                    if let Some(broker) = &self.permission_broker {
                        executor = executor.with_permission_broker(Arc::clone(broker));
                    }
                    if !self.hooks.is_empty() {
                        executor = executor.with_hooks(HookChain::new(self.hooks.clone()));
                    }
                    executors.insert(blueprint.name().to_owned(), Arc::new(executor));
                }
                BlueprintBody::Agent(spec) => {
                    let registry = match &spec.tools {
                        Some(names) => {
                            let mut registry = ToolRegistry::new();
                            for tool in names.iter().filter_map(|name| full.get(name)) {
                                let _ = registry.register_arc(tool);
                            }
                            Arc::new(registry)
                        }
                        // Every application tool but the Privileged ones it does not
                        // declare; the coordinator's own only when named.
                        None => Arc::new(declared_tools(&self.tools, blueprint)),
                    };
                    rules.extend(polling_rules(&registry));
                    let provider = match &spec.provider {
                        Some(name) => self.providers.get(name).cloned().ok_or_else(|| {
                            let known: Vec<_> = self.providers.keys().cloned().collect();
                            format!(
                                "provider `{name}` is not configured (configured: {})",
                                if known.is_empty() {
                                    "none".into()
                                } else {
                                    known.join(", ")
                                }
                            )
                        }),
                        None => self
                            .provider
                            .clone()
                            .ok_or_else(|| "no provider is configured for AI agents".to_owned()),
                    };
                    let model = spec
                        .model
                        .clone()
                        .or_else(|| self.model.clone())
                        .ok_or_else(|| "no model is configured for AI agents".to_owned());
                    let mut limits = self.limits.clone();
                    if let Some(max_turns) = spec.limits.max_turns {
                        limits.max_turns = max_turns;
                    }
                    if let Some(max_cost) = spec.limits.max_cost {
                        limits.max_cost = Some(max_cost);
                    }
                    if let Some(secs) = spec.limits.turn_timeout_secs {
                        limits.turn_timeout = std::time::Duration::from_secs(secs);
                    }
                    if let Ok(model) = &model {
                        check_priced(blueprint, model, &limits, self.pricing.as_ref())?;
                    }
                    plans.insert(
                        blueprint.name().to_owned(),
                        AgentPlan {
                            registry,
                            rules,
                            provider,
                            model,
                            limits,
                            system_prompt: spec.system_prompt.clone(),
                            pricing: self.pricing.clone(),
                        },
                    );
                }
            }
        }
        let mut pipelines = DeterministicRunner::new(executors, self.workspace_root.clone());
        if let Some(memory) = &self.memory {
            pipelines = pipelines.with_memory(Arc::clone(memory));
        }
        let agents = AgentRunner::new(
            plans,
            AgentShared {
                executor_config: self.executor_config,
                permission_broker: self.permission_broker,
                workspace_root: self.workspace_root.clone(),
                memory: self.memory,
                hooks: self.hooks,
                scrubber: self.scrubber,
                secret_handles: self.secret_handles,
                provenance: self.provenance,
                checkpoints: self.checkpoints,
            },
        );
        Ok(BlueprintRunner::new(agents, pipelines))
    }
}
