//! What an `AgentRuntime` shares between its clones and its runs: the provider and
//! model, the tools and their executor, limits, memory, events and the tool choice,
//! as the builder set them. The turn loop reads it; nothing changes it after `build`
//! but the sessions' state and the approvals runs wait for.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::ToolExecutor;
use oxydra_provider::{ModelPrice, PricingTable, Provider};
use oxydra_scrubbing::Scrubber;
use oxydra_types::{ToolSchema, Usage};

use crate::context::{ContextBudget, FixedTokens};
use crate::events::EventSink;
use crate::limits::RuntimeLimits;
use crate::pending_approvals::PendingApprovals;
use crate::retrieval_scope::RetrievalScope;
use crate::session_store::SessionStore;
use crate::small_model::SmallModelDefaults;
use crate::tool_choice::ToolChoicePolicy;

/// The shared state of a runtime (see the module doc).
pub(crate) struct RuntimeInner {
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub executor: ToolExecutor,
    pub tool_schemas: Vec<ToolSchema>,
    pub schema_tokens: Arc<FixedTokens>,
    pub limits: RuntimeLimits,
    pub budget: ContextBudget,
    pub streaming: bool,
    pub sessions: SessionStore,
    /// Where turns' checkpoints go (`None`: none are recorded).
    pub checkpoints: Option<crate::turn_capture::CheckpointSettings>,
    pub retrieval_scope: RetrievalScope,
    pub retrieval_top_k: usize,
    pub scrubber: Scrubber,
    pub system_prompt: Option<String>,
    /// Where text of the system prompt came from (recorded before each tool batch).
    pub system_prompt_sources: Vec<oxydra_types::Source>,
    /// A stored session keeps its recorded system prompt and agent name.
    pub keep_session_system_prompt: bool,
    /// The agent this runtime runs as, recorded in session metas.
    pub agent_name: Option<String>,
    pub workspace_root: PathBuf,
    pub event_sink: Arc<dyn EventSink>,
    pub pricing: Option<PricingTable>,
    /// The tool choice of each turn, unless a run's options give one (or
    /// `small_model` says each run picks its own).
    pub tool_choice: Arc<dyn ToolChoicePolicy>,
    /// What the runtime changed because its model is small.
    pub small_model: SmallModelDefaults,
    /// The approvals the runtime's runs ended waiting for.
    pub pending_approvals: PendingApprovals,
}

impl RuntimeInner {
    /// What `usage` of `model` (the runtime's, or a fallback model that answered)
    /// costs, in US dollars: by the runtime's own pricing table when it was given one,
    /// else by the built-in one.
    pub(crate) fn price(&self, model: &str, usage: &Usage) -> f64 {
        match &self.pricing {
            Some(table) => table.cost(model, usage),
            None => oxydra_provider::cost(model, usage),
        }
    }

    /// The prices of every model a call may reach: the runtime's, then its provider's
    /// fallback models, from the same table as [`Self::price`]; an unknown one is left
    /// out (never with `max_cost` set: `build` refuses that).
    pub(crate) fn call_prices(&self) -> Vec<ModelPrice> {
        call_models(self.provider.as_ref(), &self.model)
            .iter()
            .filter_map(|model| price_of(self.pricing.as_ref(), model))
            .collect()
    }
}

/// The models a call of `provider` for `model` may reach: `model`, then the fallback
/// models of a [`ReliableProvider`](oxydra_provider::ReliableProvider).
pub(crate) fn call_models(provider: &dyn Provider, model: &str) -> Vec<String> {
    let mut models = vec![model.to_owned()];
    if let Some(reliable) = oxydra_provider::ReliableProvider::downcast(provider) {
        models.extend(reliable.fallback_models().into_iter().map(str::to_owned));
    }
    models
}

/// The price of `model` in `pricing`, else in the built-in table.
pub(crate) fn price_of(pricing: Option<&PricingTable>, model: &str) -> Option<ModelPrice> {
    match pricing {
        Some(table) => table.price(model),
        None => PricingTable::builtin().price(model),
    }
}
