//! AI agent runs: an `AgentRuntime` per run, built with the blueprint's name, system
//! prompt, allowed tools, rules, provider, model and limits, given the run's
//! `prompt` as the user message. With memory, the run's session records the agent's
//! name, model and system prompt (its `SessionMeta`).
//!
//! A run taken over from a worker that died continues its stored session, its budget
//! counters starting from what the earlier workers recorded (`RunRequest::used`); the
//! runtime records the run's totals through the run's [`RunLedger`](crate::RunLedger)
//! before each provider call and after each answer.
//!
//! A run whose permission broker deferred consent (`PermissionDecision::Defer`, the
//! `DeferAll` broker) ends with [`RunOutcome::AwaitingApproval`]; executed again with
//! the person's decisions (`RunRequest::decisions`), it resumes its stored session
//! with them (the runtime's `RunRequest::decide`) instead of sending its prompt. That
//! needs a session store (`RunnerDeps::memory`): without one a deferred run fails with
//! kind `config`, as it could never resume.
//!
//! With a checkpoint store ([`RunnerDeps::checkpoints`](crate::RunnerDeps::checkpoints))
//! and memory, each turn that changes the workspace records a checkpoint in the run's
//! session, as `oxydra run` does.
//!
//! The runtime scrubs tool output before the model sees it, but the model's final
//! text may still echo a secret (from the prompt, say): the store scrubs the run's
//! result and error before recording them (`RunStore::finish_run`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::{Hook, PermissionBroker, SecretHandles, ToolExecutorConfig, ToolRule};
use oxydra_memory::Memory;
use oxydra_provider::{PricingTable, Provider};
use oxydra_runtime::{AgentRuntime, RuntimeError, RuntimeLimits};
use oxydra_scrubbing::Scrubber;
use oxydra_tools::ToolRegistry;
use serde_json::{Value, json};
use tracing::Instrument;

use super::{RunOutcome, RunRequest};
use crate::run::RunError;

/// How one AI agent blueprint runs (resolved at load; a missing provider or model is
/// kept as the message the run fails with).
pub(crate) struct AgentPlan {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) rules: Vec<ToolRule>,
    pub(crate) provider: Result<Arc<dyn Provider>, String>,
    pub(crate) model: Result<String, String>,
    pub(crate) limits: RuntimeLimits,
    pub(crate) system_prompt: Option<String>,
    /// The prices cost is counted with (`None`: the built-in table).
    pub(crate) pricing: Option<PricingTable>,
}

/// What every AI agent run of a coordinator shares, whatever its blueprint.
pub(crate) struct AgentShared {
    pub(crate) executor_config: ToolExecutorConfig,
    pub(crate) permission_broker: Option<Arc<dyn PermissionBroker>>,
    pub(crate) workspace_root: PathBuf,
    pub(crate) memory: Option<Arc<dyn Memory>>,
    pub(crate) hooks: Vec<Arc<dyn Hook>>,
    /// Tool output, events and stored messages are scrubbed with it (held keys by value).
    pub(crate) scrubber: Scrubber,
    /// What `{{secret:NAME}}` stands for inside a call.
    pub(crate) secret_handles: SecretHandles,
    /// Which sources hold side-effecting and privileged calls for a person.
    pub(crate) provenance: oxydra_executor::ProvenancePolicy,
    /// Where each turn that changes the workspace records its checkpoint.
    pub(crate) checkpoints: Option<crate::RunCheckpoints>,
}

/// Runs AI agent blueprints.
pub struct AgentRunner {
    plans: HashMap<String, AgentPlan>,
    shared: AgentShared,
}

impl std::fmt::Debug for AgentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRunner")
            .field("blueprints", &self.plans.keys().collect::<Vec<_>>())
            .field("workspace_root", &self.shared.workspace_root)
            .finish_non_exhaustive()
    }
}

impl AgentRunner {
    pub(crate) fn new(plans: HashMap<String, AgentPlan>, shared: AgentShared) -> Self {
        Self { plans, shared }
    }

    fn runtime(
        &self,
        name: &str,
        plan: &AgentPlan,
        resumed: bool,
    ) -> Result<AgentRuntime, RunError> {
        let provider = plan
            .provider
            .clone()
            .map_err(|message| RunError::new("config", message))?;
        let model = plan
            .model
            .clone()
            .map_err(|message| RunError::new("config", message))?;
        let mut builder = AgentRuntime::builder()
            .provider(provider)
            .model(model)
            .tools(Arc::clone(&plan.registry))
            .rules(plan.rules.clone())
            .executor_config(self.shared.executor_config.clone())
            .limits(plan.limits.clone())
            .workspace_root(self.shared.workspace_root.clone())
            // Recorded in the session's meta: whoever continues the session later
            // (`oxydra run --session`) can go on as this agent, with its prompt.
            .agent_name(name)
            .scrubber(self.shared.scrubber.clone())
            .secret_handles(self.shared.secret_handles.clone())
            .provenance_policy(self.shared.provenance.clone())
            .hooks(self.shared.hooks.iter().cloned());
        if let Some(prompt) = &plan.system_prompt {
            builder = builder.system_prompt(prompt.clone());
        }
        if let Some(pricing) = &plan.pricing {
            builder = builder.pricing(pricing.clone());
        }
        if let Some(broker) = &self.shared.permission_broker {
            builder = builder.permission_broker(Arc::clone(broker));
        }
        if let Some(memory) = &self.shared.memory {
            builder = builder.memory(Arc::clone(memory));
            // A run's changes are its session's checkpoints (`GET /runs/{id}/changes`).
            if let Some(recorded) = &self.shared.checkpoints {
                builder = builder.checkpoints(Arc::clone(&recorded.store), recorded.config.clone());
            }
        }
        if resumed {
            // The dead holder's session lease may outlive its claim on the run (on
            // another host it is not known to be dead): wait for it to lapse.
            builder = builder
                .session_wait(oxydra_memory::DEFAULT_LEASE_TTL + std::time::Duration::from_secs(1));
        }
        builder
            .build()
            .map_err(|error| RunError::new(error.kind(), error.to_string()))
    }

    /// Runs the agent on the run's `prompt` (or, with decisions, resumes its session
    /// with them). The result is `{"text", "session_id", "turns", "usage", "cost"}`,
    /// `turns`, `usage` and `cost` counting the whole run (the `used` of earlier
    /// workers and executions included); they are recorded with the run's ledger as
    /// they grow. A run whose broker deferred consent ends
    /// [`RunOutcome::AwaitingApproval`].
    pub async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
        let plan = self.plans.get(run.blueprint.name()).ok_or_else(|| {
            RunError::new(
                "internal",
                format!(
                    "no agent plan was built for blueprint `{}`",
                    run.blueprint.name()
                ),
            )
        })?;
        let prompt = run
            .parameters
            .get("prompt")
            .and_then(Value::as_str)
            .ok_or_else(|| RunError::new("internal", "validated parameters lack `prompt`"))?
            .to_owned();
        let runtime = self.runtime(run.blueprint.name(), plan, run.resumed)?;
        let session_id = crate::run::session_for(&run.run_id);
        let span = tracing::info_span!("agent_run", run_id = %run.run_id,
            agent_name = %run.blueprint.name(), model = %runtime.model());
        // A run taken over from a worker that died continues its stored session (when
        // the prompt was stored) instead of sending the prompt again.
        let resume = match (&self.shared.memory, run.resumed) {
            (Some(memory), true) => memory.session_exists(&session_id).await.unwrap_or(false),
            _ => false,
        };
        // The run's counters start from what earlier workers used of it, and its totals
        // are recorded as they grow: `max_turns` and `max_cost` hold over the whole run.
        let mut request = runtime
            .session(&session_id)
            .cancel(&run.cancel)
            .already_used(run.used.into())
            .usage_ledger(Arc::new(run.ledger.clone()));
        let decided = !run.decisions.is_empty();
        if decided {
            // The person's decisions resume the session where it stopped: the
            // approved calls run, the denied ones reach the model as tool errors.
            tracing::info!(run_id = %run.run_id, decisions = run.decisions.len(),
                "resuming a run with the decisions on its approvals");
            for decided in run.decisions {
                request = request.decide(decided.pending, decided.decision);
            }
        } else if resume {
            // A request without a prompt resumes the stored session.
            tracing::info!(run_id = %run.run_id, "continuing a run taken over from a worker that stopped");
        } else {
            request = request.prompt(prompt);
        }
        let outcome = request.into_future().instrument(span).await;
        match outcome {
            Ok(outcome) => Ok(RunOutcome::Finished(json!({
                "text": outcome.final_text,
                "session_id": outcome.session_id,
                "turns": outcome.turns,
                "usage": outcome.usage,
                "cost": outcome.cost,
            }))),
            Err(RuntimeError::Cancelled) => Err(RunError::cancelled()),
            Err(RuntimeError::AwaitingApproval { pending }) => {
                if self.shared.memory.is_none() {
                    return Err(RunError::new(
                        "config",
                        format!(
                            "the permission broker deferred {} tool call(s) to a person, but \
                             runs can wait for approval only with a session store \
                             (memory) to resume from",
                            pending.len()
                        ),
                    ));
                }
                Ok(RunOutcome::AwaitingApproval(pending))
            }
            Err(error) => Err(RunError::new(error.kind(), error.to_string())),
        }
    }
}
