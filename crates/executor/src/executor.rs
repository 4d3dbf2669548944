//! `ToolExecutor`: the rules, caches and broker shared by every batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use oxydra_tools::ToolRegistry;
use oxydra_types::{CallId, SessionId, ToolCall};

use crate::call_verdicts::{CallVerdict, CallVerdicts};
use crate::config::ToolExecutorConfig;
use crate::consent::{GrantStore, PermissionBroker};
use crate::context::{ExecutionContext, SessionRunId};
use crate::dedupe::DedupeCache;
use crate::error::ToolExecutionError;
use crate::events::ToolEventSink;
use crate::hook_chain::HookChain;
use crate::provenance::ProvenancePolicy;
use crate::record::ToolBatchResult;
use crate::rules::RuleSet;
use crate::rules::process_state::{ExecutionPhase, ProcessToolState};
use crate::rules::rule::ToolRule;
use crate::rules::rule_kind::ToolRuleKind;
use crate::rules::run_state::RunStates;
use crate::secret_handles::SecretHandles;
use crate::validation::{CheckedArguments, SchemaCache};

/// How long per-run state of a session run that was never completed is kept.
pub const RUN_STATE_TTL: Duration = Duration::from_secs(3600);

/// Runs tool calls under validation, rules, dedupe, consent and timeouts.
///
/// One executor serves many sessions: per-process state lives in the
/// [`ProcessToolState`] the caller holds, per-run state is kept here by
/// [`SessionRunId`], and dedupe entries, cooldowns and standing grants persist here.
pub struct ToolExecutor {
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) rules: RuleSet,
    pub(crate) config: ToolExecutorConfig,
    pub(crate) broker: Option<Arc<dyn PermissionBroker>>,
    pub(crate) schemas: SchemaCache,
    pub(crate) runs: RunStates,
    pub(crate) dedupe: DedupeCache,
    pub(crate) last_run: DashMap<String, Instant>,
    pub(crate) grants: GrantStore,
    pub(crate) hooks: HookChain,
    pub(crate) verdicts: CallVerdicts,
    pub(crate) secrets: Arc<SecretHandles>,
    pub(crate) provenance: ProvenancePolicy,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("tools", &self.tools)
            .field("rules", &self.rules.rules())
            .field("config", &self.config)
            .field("broker", &self.broker.is_some())
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor for `tools` under `rules`. Rules naming unknown tools are kept (the
    /// registry may be a subset) but logged. A tool that declares its consent
    /// ([`Tool::consent`](oxydra_tools::Tool::consent)) gets a `requires_consent` rule
    /// with that scope, unless `rules` has one for it already (which then decides).
    pub fn new(tools: Arc<ToolRegistry>, rules: Vec<ToolRule>, config: ToolExecutorConfig) -> Self {
        for rule in &rules {
            if !tools.contains(&rule.tool) {
                tracing::warn!(tool = %rule.tool, kind = rule.kind_name(), "rule names a tool that is not registered");
            }
        }
        let rules = with_declared_consent(&tools, rules);
        Self {
            tools,
            rules: RuleSet::new(rules),
            config,
            broker: None,
            schemas: SchemaCache::new(),
            runs: RunStates::default(),
            dedupe: DedupeCache::default(),
            last_run: DashMap::new(),
            grants: GrantStore::default(),
            hooks: HookChain::default(),
            verdicts: CallVerdicts::default(),
            secrets: Arc::new(SecretHandles::default()),
            provenance: ProvenancePolicy::default(),
        }
    }

    /// The same executor holding side-effecting and privileged calls for a person
    /// under `policy` once the session has read a source it names (the default holds
    /// on `web` and `mcp`; [`ProvenancePolicy::off`] holds nothing).
    #[must_use]
    pub fn with_provenance_policy(mut self, policy: ProvenancePolicy) -> Self {
        self.provenance = policy;
        self
    }

    /// The provenance policy.
    pub fn provenance_policy(&self) -> &ProvenancePolicy {
        &self.provenance
    }

    /// The same executor putting the values of `secrets` in where a call's arguments
    /// write `{{secret:NAME}}`, inside the call only (see [`SecretHandles`]).
    #[must_use]
    pub fn with_secret_handles(mut self, secrets: SecretHandles) -> Self {
        self.secrets = Arc::new(secrets);
        self
    }

    /// The same executor asking `broker` for consent.
    pub fn with_permission_broker(mut self, broker: Arc<dyn PermissionBroker>) -> Self {
        self.broker = Some(broker);
        self
    }

    /// The same executor calling `hooks` (in this order) before and after each tool
    /// call (see [`Hook`](crate::Hook)).
    pub fn with_hooks(mut self, hooks: HookChain) -> Self {
        self.hooks = hooks;
        self
    }

    /// The hooks it calls.
    pub fn hooks(&self) -> &HookChain {
        &self.hooks
    }

    /// The tools it runs.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// The configured rules, as given.
    pub fn rules(&self) -> &[ToolRule] {
        self.rules.rules()
    }

    /// The settings.
    pub fn config(&self) -> &ToolExecutorConfig {
        &self.config
    }

    /// Fresh per-process state for one `process()` call (a heartbeat continuation
    /// starts a new one too).
    pub fn new_process_state(&self) -> ProcessToolState {
        let mut process = ProcessToolState {
            history: Vec::new(),
            start_constraints_done: false,
            exit_requirements_pending: self.rules.exit_tools().to_vec(),
            phase: ExecutionPhase::Running,
        };
        // Met at once when there are no start tools.
        self.rules.note_start_constraints(&mut process);
        process
    }

    /// Parse and validate `call`'s arguments without running it (the guard
    /// [`execute_batch`](Self::execute_batch) applies first).
    pub fn validate_call(&self, call: &ToolCall) -> Result<CheckedArguments, ToolExecutionError> {
        let tool = self
            .tools
            .get(&call.name)
            .ok_or_else(|| ToolExecutionError::NotFound {
                tool_name: call.name.clone(),
                available: self.tools.names(),
            })?;
        self.schemas.check(call, tool.as_ref())
    }

    /// Run every `start_constraint` tool (with `{}` arguments); until each has run
    /// successfully, other tools are refused.
    pub async fn execute_start_constraints(
        &self,
        process: &mut ProcessToolState,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
    ) -> ToolBatchResult {
        let calls = synthetic_calls(self.rules.start_tools().iter());
        let result = self.run_calls(&calls, process, ctx, events, true).await;
        // Each start tool that ran has been noted already; this covers a process state
        // that was not made by `new_process_state` and an executor without start tools.
        self.rules.note_start_constraints(process);
        result
    }

    /// Run every `required_before_exit` tool that has not run in this process (with
    /// `{}` arguments), and mark the process as exited.
    pub async fn execute_exit_requirements(
        &self,
        process: &mut ProcessToolState,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
    ) -> ToolBatchResult {
        let pending: Vec<String> = process.exit_requirements_pending.clone();
        let calls = synthetic_calls(pending.iter());
        let result = self.run_calls(&calls, process, ctx, events, true).await;
        process.phase = ExecutionPhase::Exited;
        result
    }

    /// Whether the loop should end: an `exit_loop` tool ran in this process.
    pub fn should_exit_loop(&self, process: &ProcessToolState) -> bool {
        process.phase != ExecutionPhase::Running
    }

    /// Whether `tool_name` needs a heartbeat request to continue the loop (it has no
    /// `continue_loop` rule).
    pub fn requires_heartbeat(&self, tool_name: &str) -> bool {
        !self.rules.for_tool(tool_name).continue_loop
    }

    /// Forget a finished session run's per-run state.
    pub fn complete_session_run(&self, session_run: SessionRunId) {
        self.runs.remove(session_run);
    }

    /// Drop expired dedupe entries, cooldowns, duration grants and stale session runs.
    pub fn prune_expired(&self) {
        let now = Instant::now();
        self.dedupe.prune(self.config.dedupe_window, now);
        let longest = self.rules.longest_cooldown();
        self.last_run
            .retain(|_, at| now.saturating_duration_since(*at) < longest);
        self.grants.prune(now);
        self.runs.prune(RUN_STATE_TTL, now);
    }

    /// Records a person's decision on call `call_id` of session `session_id`, whose
    /// consent was deferred: when the call is run again, consent takes `verdict`
    /// (once) instead of asking the broker.
    pub fn decide_call(&self, session_id: &SessionId, call_id: &CallId, verdict: CallVerdict) {
        self.verdicts.put(session_id, call_id, verdict);
    }

    /// Drops the decision on a call that was not run after all (the resumed batch
    /// ended early), so that it cannot apply to a later call reusing the id.
    pub fn forget_call_decision(&self, session_id: &SessionId, call_id: &CallId) {
        self.verdicts.take(session_id, call_id);
    }

    /// Drop every standing grant of `tool_name`.
    pub fn revoke_grants(&self, tool_name: &str) {
        self.grants.revoke_tool(tool_name);
    }

    /// Drop every standing grant.
    pub fn clear_grants(&self) {
        self.grants.clear();
    }

    /// Sizes of the persistent state, for diagnostics.
    pub fn state_stats(&self) -> ExecutorStateStats {
        ExecutorStateStats {
            session_runs: self.runs.len(),
            dedupe_sessions: self.dedupe.sessions(),
            cooldowns: self.last_run.len(),
            grants: self.grants.len(),
            compiled_schemas: self.schemas.len(),
        }
    }
}

/// How much state an executor holds (see [`ToolExecutor::state_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorStateStats {
    /// Session runs with per-run state.
    pub session_runs: usize,
    /// Sessions with dedupe entries.
    pub dedupe_sessions: usize,
    /// Tools with a recorded last run (for cooldowns).
    pub cooldowns: usize,
    /// Standing consent grants.
    pub grants: usize,
    /// Tools whose validator is compiled.
    pub compiled_schemas: usize,
}

fn synthetic_calls<'a>(tools: impl Iterator<Item = &'a String>) -> Vec<ToolCall> {
    tools
        .map(|tool| ToolCall::new(CallId::generate(), tool.clone(), "{}"))
        .collect()
}

/// `rules` with a `requires_consent` rule, first, for every tool of `tools` that declares
/// its consent and has no such rule in `rules`.
fn with_declared_consent(tools: &ToolRegistry, rules: Vec<ToolRule>) -> Vec<ToolRule> {
    let ruled = |name: &str| {
        rules.iter().any(|rule| {
            rule.tool == name && matches!(rule.kind, ToolRuleKind::RequiresConsent { .. })
        })
    };
    let declared: Vec<ToolRule> = tools
        .names()
        .into_iter()
        .filter(|name| !ruled(name))
        .filter_map(|name| {
            let scope = tools.get(&name)?.consent()?;
            Some(ToolRule::new(name, ToolRuleKind::RequiresConsent { scope }))
        })
        .collect();
    if declared.is_empty() {
        return rules;
    }
    declared.into_iter().chain(rules).collect()
}
