//! Building an [`AgentRuntime`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use oxydra_executor::{
    Hook, HookChain, NoopEventSink, PermissionBroker, SecretHandles, ToolExecutor,
    ToolExecutorConfig, ToolRule,
};
use oxydra_memory::{Memory, MemoryRetrieval};
use oxydra_provider::{ModelPrice, PricingTable, Provider, ProviderError, RetryPolicy};
use oxydra_scrubbing::Scrubber;
use oxydra_tools::Tool;

use crate::context::{ContextBudget, FixedTokens};
use crate::error::RuntimeError;
use crate::events::EventSink;
use crate::limits::RuntimeLimits;
use crate::pending_approvals::PendingApprovals;
use crate::provider_retries::{Retries, with_retries};
use crate::retrieval_scope::RetrievalScope;
use crate::runtime::AgentRuntime;
use crate::runtime_inner::RuntimeInner;
use crate::session_lease::LeaseSettings;
use crate::session_store::SessionStore;
use crate::small_model::SmallModelDefaults;
use crate::tool_choice::ToolChoicePolicy;
use crate::tool_set::{IntoToolSet, ToolSet, gather};

/// The shortest session lease time to live: renewing takes a database write, so a
/// shorter one would lapse under a loaded machine while its run is alive.
const MIN_LEASE_TTL: Duration = Duration::from_secs(1);

/// Snippets injected per run when retrieval is set, unless changed.
pub const DEFAULT_RETRIEVAL_TOP_K: usize = 4;

/// Builds an [`AgentRuntime`]; `provider` and `model` are required, everything else
/// has a default (the default retry policy, no tools, default limits, no memory, the
/// default scrubber, no system prompt, the current directory as workspace, no event
/// sink, the built-in prices).
#[derive(Default)]
#[must_use]
pub struct AgentRuntimeBuilder {
    provider: Option<Arc<dyn Provider>>,
    /// Why [`provider_from_env`](Self::provider_from_env) found no provider.
    provider_error: Option<ProviderError>,
    retries: Retries,
    model: Option<String>,
    tools: Vec<ToolSet>,
    rules: Vec<ToolRule>,
    executor_config: Option<ToolExecutorConfig>,
    permission_broker: Option<Arc<dyn PermissionBroker>>,
    limits: Option<RuntimeLimits>,
    memory: Option<Arc<dyn Memory>>,
    checkpoints: Option<crate::turn_capture::CheckpointSettings>,
    retrieval: Option<Arc<dyn MemoryRetrieval>>,
    retrieval_scope: RetrievalScope,
    retrieval_top_k: Option<usize>,
    scrubber: Option<Scrubber>,
    known_secrets: Vec<(String, String)>,
    secret_handles: SecretHandles,
    provenance_policy: Option<oxydra_executor::ProvenancePolicy>,
    system_prompt: Option<String>,
    system_prompt_sources: Vec<oxydra_types::Source>,
    keep_session_system_prompt: bool,
    agent_name: Option<String>,
    workspace_root: Option<PathBuf>,
    event_sink: Option<Arc<dyn EventSink>>,
    pricing: Option<PricingTable>,
    model_price: Option<ModelPrice>,
    streaming: Option<bool>,
    lease: LeaseSettings,
    tool_choice: Option<Arc<dyn ToolChoicePolicy>>,
    hooks: Vec<Arc<dyn Hook>>,
    /// `Some(false)`: a small model is used as given.
    small_model_defaults: Option<bool>,
}

impl AgentRuntime {
    /// A builder; `provider` and `model` are required.
    pub fn builder() -> AgentRuntimeBuilder {
        AgentRuntimeBuilder::new()
    }
}

impl AgentRuntimeBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The provider (required). It is wrapped in a [`ReliableProvider`](oxydra_provider::ReliableProvider) with the
    /// default [`RetryPolicy`] (retries with backoff, and the stream → complete
    /// fallback) unless it already is one, or [`retry_policy`](Self::retry_policy) or
    /// [`without_retries`](Self::without_retries) says otherwise.
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self.provider_error = None;
        self
    }

    /// The provider of kind `kind` (`openai`, `anthropic`, see
    /// [`PROVIDER_KINDS`](oxydra_provider::PROVIDER_KINDS)) configured from the
    /// environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, …), and the model to ask: the
    /// one-call form of [`provider`](Self::provider) and [`model`](Self::model). A
    /// missing key or an unknown kind is reported by [`build`](Self::build).
    pub fn provider_from_env(mut self, kind: &str, model: impl Into<String>) -> Self {
        match oxydra_provider::from_env(kind) {
            Ok(provider) => {
                self.provider = Some(provider);
                self.provider_error = None;
            }
            Err(error) => {
                self.provider = None;
                self.provider_error = Some(error);
            }
        }
        self.model(model)
    }

    /// Retries under `policy` instead of the default one.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retries = Retries::Policy(policy);
        self
    }

    /// Uses the provider exactly as given: no retries and no stream → complete
    /// fallback, so its first error ends the call (unless it is a
    /// [`ReliableProvider`](oxydra_provider::ReliableProvider) itself).
    pub fn without_retries(mut self) -> Self {
        self.retries = Retries::Off;
        self
    }

    /// The model name at the provider (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Adds tools the model may call: a [`ToolRegistry`](oxydra_tools::ToolRegistry),
    /// a `Vec<Arc<dyn Tool>>` or a tuple of tools (`.tools((Weather, Search))`).
    /// Everything given to `tools` and [`tool`](Self::tool) is gathered; two tools of
    /// one name make [`build`](Self::build) fail.
    pub fn tools(mut self, tools: impl IntoToolSet) -> Self {
        self.tools.push(tools.into_tool_set());
        self
    }

    /// Adds one tool the model may call (e.g. one made by `#[tool]`).
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(ToolSet::List(vec![Arc::new(tool)]));
        self
    }

    /// Adds executor tool rules (`max_calls`, ordering, `requires_consent`, …); like
    /// [`tools`](Self::tools) and [`tool`](Self::tool), every call adds to what the
    /// calls before it gave. A tool can also declare its consent itself
    /// ([`Tool::consent`], `#[tool(consent = "session")]`); a `requires_consent` rule
    /// for it decides instead.
    pub fn rules(mut self, rules: impl IntoIterator<Item = ToolRule>) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Adds one executor tool rule (see [`rules`](Self::rules)).
    pub fn rule(mut self, rule: ToolRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds a [`Hook`]: called before each model request, before and after each tool
    /// call and on every event, after the hooks added before it (first denial wins,
    /// rewrites chain).
    pub fn hook(mut self, hook: impl Hook + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Adds hooks already shared (see [`hook`](Self::hook)), in order.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn Hook>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// The executor's configuration (timeouts, dedupe, permissions, parallelism).
    pub fn executor_config(mut self, config: ToolExecutorConfig) -> Self {
        self.executor_config = Some(config);
        self
    }

    /// Who answers consent requests.
    pub fn permission_broker(mut self, broker: Arc<dyn PermissionBroker>) -> Self {
        self.permission_broker = Some(broker);
        self
    }

    /// The budgets.
    pub fn limits(mut self, limits: RuntimeLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Where sessions are stored (write-through); without it they live in the process.
    pub fn memory(mut self, memory: Arc<dyn Memory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Records a checkpoint of each turn that changes the workspace in `store` (see
    /// [`Checkpoints`](crate::Checkpoints)), as `config` says; needs
    /// [`memory`](Self::memory) too for the runtime's
    /// [`checkpoints`](AgentRuntime::checkpoints) handle.
    pub fn checkpoints(
        mut self,
        store: Arc<dyn oxydra_memory::CheckpointStore>,
        config: oxydra_tools::checkpoint::CheckpointConfig,
    ) -> Self {
        self.checkpoints = Some(crate::turn_capture::CheckpointSettings { store, config });
        self
    }

    /// Where relevant snippets are searched and new texts indexed.
    pub fn retrieval(mut self, retrieval: Arc<dyn MemoryRetrieval>) -> Self {
        self.retrieval = Some(retrieval);
        self
    }

    /// Where retrieval searches (default: [`RetrievalScope::Session`], the running
    /// session's chunks; [`RetrievalScope::Global`] searches every session's).
    pub fn retrieval_scope(mut self, scope: RetrievalScope) -> Self {
        self.retrieval_scope = scope;
        self
    }

    /// How many snippets to inject (default [`DEFAULT_RETRIEVAL_TOP_K`]).
    pub fn retrieval_top_k(mut self, top_k: usize) -> Self {
        self.retrieval_top_k = Some(top_k);
        self
    }

    /// The scrubber tool output passes through (default [`Scrubber::new`]).
    pub fn scrubber(mut self, scrubber: Scrubber) -> Self {
        self.scrubber = Some(scrubber);
        self
    }

    /// A secret this program holds (a provider key, a server's token), by name and
    /// value: redacted by value, plain or encoded (spaced, base64, hex, URL-escaped,
    /// as decimal or octal bytes), from every tool output, event, stored message and
    /// request, on top of the scrubber's patterns
    /// ([`Scrubber::with_known_secrets`]). The name is what a redaction reports; the
    /// value never appears in an error.
    ///
    /// ```
    /// # use oxydra_runtime::AgentRuntime;
    /// # use oxydra_provider::ScriptedProvider;
    /// let runtime = AgentRuntime::builder()
    ///     .provider(std::sync::Arc::new(ScriptedProvider::new(Vec::new())))
    ///     .model("m")
    ///     .known_secret("DEPLOY_TOKEN", "dpl_7Hq2Lm9Xv4Rt8Zp1Wk6N")
    ///     .build()?;
    /// # let _ = runtime;
    /// # Ok::<(), oxydra_runtime::RuntimeError>(())
    /// ```
    pub fn known_secret(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.known_secrets.push((name.into(), value.into()));
        self
    }

    /// Secrets the model may name but never holds: `{{secret:NAME}}` in a call's
    /// arguments is replaced by the value inside the call only, for the tools (and
    /// hosts) each handle allows; anything else is refused with a message the model
    /// can correct from ([`SecretHandles`]). Every value is also scrubbed by value, as
    /// [`known_secret`](Self::known_secret) does.
    ///
    /// ```
    /// # use oxydra_runtime::AgentRuntime;
    /// # use oxydra_provider::ScriptedProvider;
    /// use oxydra_executor::{SecretHandle, SecretHandles};
    ///
    /// let handles = SecretHandles::default().with(
    ///     "DEPLOY_TOKEN",
    ///     SecretHandle::new("dpl_7Hq2Lm9Xv4Rt8Zp1Wk6N", ["shell_exec"], Vec::<String>::new()),
    /// );
    /// let runtime = AgentRuntime::builder()
    ///     .provider(std::sync::Arc::new(ScriptedProvider::new(Vec::new())))
    ///     .model("m")
    ///     .secret_handles(handles)
    ///     .build()?;
    /// # let _ = runtime;
    /// # Ok::<(), oxydra_runtime::RuntimeError>(())
    /// ```
    pub fn secret_handles(mut self, handles: SecretHandles) -> Self {
        self.secret_handles = handles;
        self
    }

    /// Which sources, once the session has read them, make side-effecting and
    /// privileged calls wait for a person (DESIGN.md §3.13); default: `web` and `mcp`
    /// ([`ProvenancePolicy::default`](oxydra_executor::ProvenancePolicy)).
    pub fn provenance_policy(mut self, policy: oxydra_executor::ProvenancePolicy) -> Self {
        self.provenance_policy = Some(policy);
        self
    }

    /// The system prompt, sent first in every request.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Where text put into the [`system_prompt`](Self::system_prompt) came from, beyond
    /// the person and a trusted configuration: [`Source::Workspace`](oxydra_types::Source)
    /// for project instructions (`AGENTS.md`) read from the workspace. Each counts as
    /// read before every tool batch, so a [`provenance_policy`](Self::provenance_policy)
    /// holding its kind makes side-effecting and privileged calls wait for a person —
    /// as any workspace text the model reads would (DESIGN.md §3.13). Default none.
    pub fn system_prompt_source(mut self, source: oxydra_types::Source) -> Self {
        if !self.system_prompt_sources.contains(&source) {
            self.system_prompt_sources.push(source);
        }
        self
    }

    /// Whether a stored session keeps the system prompt it was recorded with (default
    /// `false`: every run sends this runtime's [`system_prompt`](Self::system_prompt)).
    ///
    /// With memory, each run records what its session runs with (a
    /// [`SessionMeta`](oxydra_memory::SessionMeta): the model, the system prompt sent
    /// and the agent name). With this set, a run on a session that has a recorded meta
    /// sends the recorded system prompt (none, when it was recorded without one) and
    /// keeps the recorded agent name, instead of this runtime's: so a session an agent
    /// started goes on as that agent when someone else's runtime continues it. New
    /// sessions, and sessions stored before metas were recorded, get this runtime's.
    pub fn keep_session_system_prompt(mut self, keep: bool) -> Self {
        self.keep_session_system_prompt = keep;
        self
    }

    /// The name of the agent (blueprint) this runtime runs as, recorded in the meta of
    /// the sessions it runs (see
    /// [`keep_session_system_prompt`](Self::keep_session_system_prompt)); default none.
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// The root directory of the file tools (default: the current directory).
    pub fn workspace_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.workspace_root = Some(root.into());
        self
    }

    /// Where every run's events go.
    pub fn event_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.event_sink = Some(sink);
        self
    }

    /// The prices cost is computed with (default: the built-in table).
    pub fn pricing(mut self, pricing: PricingTable) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// The price of this runtime's [`model`](Self::model), in US dollars per million
    /// tokens: added to the [`pricing`](Self::pricing) table (or to the built-in one)
    /// under the model's name, replacing what it says for that model. Needed for
    /// `max_cost` on a model without a built-in price (a local model, an OpenRouter id,
    /// a model newer than the table): `build` refuses a cost budget it could not count
    /// ([`RuntimeError::UnpricedModel`]). A free model: `ModelPrice::new(0.0, 0.0, 0.0)`.
    pub fn model_price(mut self, price: ModelPrice) -> Self {
        self.model_price = Some(price);
        self
    }

    /// How long a run waits for a session another run holds (in another runtime or
    /// process sharing the memory) before failing with
    /// [`RuntimeError::SessionBusy`] (default [`DEFAULT_SESSION_WAIT`](crate::DEFAULT_SESSION_WAIT); zero: fail at
    /// once).
    pub fn session_wait(mut self, wait: Duration) -> Self {
        self.lease.wait = wait;
        self
    }

    /// The time to live of a run's lease on its session (default
    /// [`DEFAULT_LEASE_TTL`](oxydra_memory::DEFAULT_LEASE_TTL)): the run renews it every third of that; a run that died
    /// stops renewing, and its session is free again after at most this long.
    pub fn session_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease.ttl = ttl;
        self
    }

    /// Whether to stream responses (default: when the provider can).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = Some(streaming);
        self
    }

    /// The tool choice of every run's turns (default `auto` on every turn): a
    /// [`ToolChoice`](oxydra_provider::ToolChoice) for all of them, or a policy per turn
    /// such as [`FirstCall`](crate::FirstCall). A run may override it with
    /// [`RunRequest::tool_choice`](crate::RunRequest::tool_choice).
    pub fn tool_choice(mut self, policy: impl ToolChoicePolicy + 'static) -> Self {
        self.tool_choice = Some(Arc::new(policy));
        self
    }

    /// Whether a small model ([`Provider::is_small_model`]) gets the small-model
    /// defaults (default: yes): fewer built-in tools, the workspace's paths for the
    /// file tools' arguments, and a tool choice per run when none is set (see
    /// [`SmallModelDefaults`](crate::SmallModelDefaults) and the `small_model` module).
    /// With `false` it is used like any other model.
    pub fn small_model_defaults(mut self, on: bool) -> Self {
        self.small_model_defaults = Some(on);
        self
    }

    /// The runtime.
    ///
    /// # Errors
    /// [`RuntimeError::Config`] when the provider or the model is missing, the limits
    /// are invalid, two tools share a name, or the tool schemas cannot be serialised;
    /// [`RuntimeError::UnpricedModel`] when `max_cost` is set and the model has no
    /// price (see [`model_price`](Self::model_price));
    /// [`RuntimeError::Provider`] when [`provider_from_env`](Self::provider_from_env)
    /// found no provider.
    pub fn build(self) -> Result<AgentRuntime, RuntimeError> {
        if let Some(error) = self.provider_error {
            return Err(RuntimeError::Provider(error));
        }
        let provider = self
            .provider
            .ok_or_else(|| RuntimeError::Config("a provider is required".into()))?;
        let workspace_root = match self.workspace_root {
            Some(root) => root,
            None => std::env::current_dir().map_err(|error| {
                RuntimeError::Config(format!(
                    "no workspace root given and the current directory is unreadable: {error}"
                ))
            })?,
        };
        let small = self.small_model_defaults.unwrap_or(true) && provider.is_small_model();
        let provider = match provider.for_workspace(&workspace_root) {
            Some(for_workspace) if small => for_workspace,
            _ => provider,
        };
        let provider = with_retries(provider, self.retries);
        let model = self
            .model
            .filter(|model| !model.trim().is_empty())
            .ok_or_else(|| RuntimeError::Config("a model name is required".into()))?;
        let limits = self.limits.unwrap_or_default();
        limits.validate()?;
        let pricing = match self.model_price {
            Some(price) => {
                let mut table = self.pricing.unwrap_or_default();
                // The table looks a routed name (`openai/gpt-4o`) up without its router.
                let name = model.rsplit('/').next().unwrap_or(&model);
                table.insert(name, price);
                Some(table)
            }
            None => self.pricing,
        };
        // The fallback models too: `max_cost` covers whichever model answers.
        if limits.max_cost.is_some()
            && let Some(unpriced) = crate::runtime_inner::call_models(provider.as_ref(), &model)
                .into_iter()
                .find(|model| crate::runtime_inner::price_of(pricing.as_ref(), model).is_none())
        {
            return Err(RuntimeError::UnpricedModel { model: unpriced });
        }
        if self.lease.ttl < MIN_LEASE_TTL {
            return Err(RuntimeError::Config(format!(
                "the session lease time to live must be at least {} ms (got {} ms)",
                MIN_LEASE_TTL.as_millis(),
                self.lease.ttl.as_millis()
            )));
        }
        let tools = gather(self.tools)?;
        let (tools, withheld_tools) = if small {
            crate::small_model::withhold(tools)?
        } else {
            (tools, Vec::new())
        };
        let small_model = SmallModelDefaults {
            applied: small,
            withheld_tools,
            per_run_tool_choice: small && self.tool_choice.is_none(),
        };
        if small {
            // `serve` and library users see it in their logs; `run` and `chat` print it.
            tracing::info!(
                withheld_tools = ?small_model.withheld_tools,
                per_run_tool_choice = small_model.per_run_tool_choice,
                "small model: the small-model defaults apply"
            );
        }
        let tool_schemas = tools.schemas();
        let schema_json = serde_json::to_string(&tool_schemas)
            .map_err(|error| RuntimeError::Config(format!("tool schemas: {error}")))?;
        let mut known_secrets = self.known_secrets;
        known_secrets.extend(
            self.secret_handles
                .values()
                .map(|(name, value)| (name.to_owned(), value.to_owned())),
        );
        let mut executor =
            ToolExecutor::new(tools, self.rules, self.executor_config.unwrap_or_default());
        if !self.secret_handles.is_empty() {
            executor = executor.with_secret_handles(self.secret_handles);
        }
        if let Some(broker) = self.permission_broker {
            executor = executor.with_permission_broker(broker);
        }
        if let Some(policy) = self.provenance_policy {
            executor = executor.with_provenance_policy(policy);
        }
        if !self.hooks.is_empty() {
            executor = executor.with_hooks(HookChain::new(self.hooks));
        }
        let capabilities = provider.capabilities(&model);
        let budget = ContextBudget::new(&limits, &capabilities);
        let scrubber = self.scrubber.unwrap_or_default();
        let scrubber = if known_secrets.is_empty() {
            scrubber
        } else {
            scrubber
                .with_known_secrets(known_secrets)
                .map_err(|error| RuntimeError::Config(error.to_string()))?
        };
        // A tool's output is scrubbed for the event that reports it and again for the
        // model: the second costs a hash and a compare (`Scrubber::with_memo`).
        let scrubber = scrubber.with_memo();
        let inner = RuntimeInner {
            streaming: self.streaming.unwrap_or(capabilities.streaming),
            provider,
            model,
            executor,
            tool_schemas,
            schema_tokens: Arc::new(FixedTokens::new(schema_json)),
            limits,
            budget,
            checkpoints: self.checkpoints.filter(|settings| settings.config.enabled),
            sessions: SessionStore::new(self.memory, self.retrieval, self.lease),
            retrieval_scope: self.retrieval_scope,
            retrieval_top_k: self.retrieval_top_k.unwrap_or(DEFAULT_RETRIEVAL_TOP_K),
            scrubber,
            system_prompt: self.system_prompt,
            system_prompt_sources: self.system_prompt_sources,
            keep_session_system_prompt: self.keep_session_system_prompt,
            agent_name: self.agent_name,
            workspace_root,
            event_sink: self.event_sink.unwrap_or_else(|| Arc::new(NoopEventSink)),
            pricing,
            tool_choice: self
                .tool_choice
                .unwrap_or_else(|| Arc::new(oxydra_provider::ToolChoice::Auto)),
            small_model,
            pending_approvals: PendingApprovals::default(),
        };
        Ok(AgentRuntime {
            inner: Arc::new(inner),
        })
    }
}

#[cfg(test)]
mod tests {
    use oxydra_provider::ScriptedProvider;

    use super::*;

    fn plain() -> Arc<dyn Provider> {
        Arc::new(ScriptedProvider::new(vec![]))
    }

    #[test]
    fn rules_add_to_the_rules_given_before() {
        use oxydra_executor::ToolRuleKind;
        let runtime = AgentRuntime::builder()
            .provider(plain())
            .model("m")
            .rules(vec![ToolRule::new("first_tool", ToolRuleKind::MaxCalls(1))])
            .rules([ToolRule::new("second_tool", ToolRuleKind::MaxCalls(2))])
            .rule(ToolRule::new("third_tool", ToolRuleKind::ExitLoop))
            .build()
            .unwrap();
        let executor = format!("{:?}", runtime.inner.executor);
        for tool in ["first_tool", "second_tool", "third_tool"] {
            assert!(executor.contains(tool), "{tool}: {executor}");
        }
    }
}
