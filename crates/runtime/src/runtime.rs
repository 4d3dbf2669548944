//! `AgentRuntime`: the entry points of a session run.

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::ToolExecutor;
use oxydra_memory::SearchScope;
use oxydra_provider::{PricingTable, Provider};
use oxydra_scrubbing::Scrubber;
use oxydra_types::{Message, RuntimeEvent, SessionId, ToolSchema, Usage};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::builder::AgentRuntimeBuilder;
use crate::context::{ContextBudget, FixedTokens};
use crate::error::RuntimeError;
use crate::events::{EventSink, RunEvents};
use crate::limits::RuntimeLimits;
use crate::session_store::SessionStore;
use crate::structured_output::OutputSchema;
use crate::tool_choice::ToolChoicePolicy;
use crate::turn_loop;

/// Where retrieval searches for snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetrievalScope {
    /// Only the chunks of the running session (default): what it said earlier that no
    /// longer sits in the context verbatim.
    #[default]
    Session,
    /// Every stored chunk, so later sessions also find what earlier ones said.
    Global,
}

impl RetrievalScope {
    pub(crate) fn for_session(self, session_id: &SessionId) -> SearchScope {
        match self {
            Self::Global => SearchScope::Global,
            Self::Session => SearchScope::Session(session_id.clone()),
        }
    }
}

/// How a session run ended when the model gave its final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOutcome {
    /// The session (pass it again to continue the conversation).
    pub session_id: SessionId,
    /// The model's final answer.
    pub final_text: String,
    /// Provider calls of the conversation loop in this run.
    pub turns: usize,
    /// Tokens used by this run (summaries included).
    pub usage: Usage,
    /// Cost of this run in US dollars.
    pub cost: f64,
    /// The structured answer, when the run was given an [`OutputSchema`] or a type
    /// (it passed the schema; `final_text` is its JSON text).
    pub output: Option<serde_json::Value>,
}

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
    pub retrieval_scope: RetrievalScope,
    pub retrieval_top_k: usize,
    pub scrubber: Scrubber,
    pub system_prompt: Option<String>,
    /// A stored session keeps its recorded system prompt and agent name.
    pub keep_session_system_prompt: bool,
    /// The agent this runtime runs as, recorded in session metas.
    pub agent_name: Option<String>,
    pub workspace_root: PathBuf,
    pub event_sink: Arc<dyn EventSink>,
    pub pricing: Option<PricingTable>,
    /// The tool choice of each turn, unless a run's options give one.
    pub tool_choice: Arc<dyn ToolChoicePolicy>,
}

impl RuntimeInner {
    /// What `usage` of the runtime's model costs, in US dollars: by the runtime's own
    /// pricing table when it was given one, else by the built-in one.
    pub(crate) fn price(&self, usage: &Usage) -> f64 {
        match &self.pricing {
            Some(table) => table.cost(&self.model, usage),
            None => oxydra_provider::cost(&self.model, usage),
        }
    }
}

/// The agent runtime: runs sessions of the turn loop against a provider, with tools,
/// budgets, memory and events. Cheap to clone (shared inside).
///
/// Build one with [`AgentRuntime::builder`]; ask it with [`run`](Self::run) or
/// [`run_typed`](Self::run_typed), or describe a run with [`session`](Self::session).
#[derive(Clone)]
pub struct AgentRuntime {
    pub(crate) inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("provider", &self.inner.provider.name())
            .field("model", &self.inner.model)
            .field("tools", &self.inner.tool_schemas.len())
            .field("limits", &self.inner.limits)
            .field("budget", &self.inner.budget)
            .finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// A builder; `provider` and `model` are required.
    pub fn builder() -> AgentRuntimeBuilder {
        AgentRuntimeBuilder::new()
    }

    /// The model the runtime asks.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The budgets.
    pub fn limits(&self) -> &RuntimeLimits {
        &self.inner.limits
    }

    /// The tool executor.
    pub fn executor(&self) -> &ToolExecutor {
        &self.inner.executor
    }

    /// Runs `prompt` in a new session with a cancellation token of its own: the
    /// shortest way to ask the agent something. The outcome's `session_id` continues
    /// the conversation with [`session`](Self::session), which also sets a run's
    /// cancellation token, event sink, tool choice and answer schema.
    ///
    /// # Errors
    /// As a [`RunRequest`](crate::RunRequest).
    pub async fn run(&self, prompt: impl Into<String>) -> Result<SessionOutcome, RuntimeError> {
        self.session(&SessionId::generate()).prompt(prompt).await
    }

    /// Runs `prompt` in a new session and returns the answer as a `T`: the model must
    /// answer through a `final_answer` tool whose parameters are `T`'s JSON Schema; an
    /// answer that does not validate (or deserialize) goes back to the model with the
    /// errors, for another turn within the budget. The long form is
    /// [`RunRequest::output`](crate::RunRequest::output).
    ///
    /// # Errors
    /// As a [`RunRequest`](crate::RunRequest); [`RuntimeError::BudgetExceeded`] when no
    /// valid answer came within `max_turns`.
    pub async fn run_typed<T>(&self, prompt: impl Into<String>) -> Result<T, RuntimeError>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let (value, _) = self
            .session(&SessionId::generate())
            .prompt(prompt)
            .output::<T>()
            .await?;
        Ok(value)
    }

    /// The events of one run: to the runtime's sink, and also to `extra` or over
    /// `channel` when given.
    pub(crate) fn run_events(
        &self,
        extra: Option<Arc<dyn EventSink>>,
        channel: Option<mpsc::UnboundedSender<RuntimeEvent>>,
    ) -> RunEvents {
        RunEvents::new(
            self.inner.scrubber.clone(),
            self.inner.event_sink.clone(),
            extra,
            channel,
            self.inner.limits.max_turns,
        )
    }

    /// Runs the turn loop for one request and ends its events with `final` or `error`.
    pub(crate) async fn run_with(
        &self,
        session_id: &SessionId,
        opening: turn_loop::Opening,
        cancel: &CancellationToken,
        events: RunEvents,
        output: Option<&OutputSchema>,
        tool_choice: Option<&dyn ToolChoicePolicy>,
    ) -> Result<SessionOutcome, RuntimeError> {
        let tool_choice = tool_choice.unwrap_or(self.inner.tool_choice.as_ref());
        let result = turn_loop::run(
            &self.inner,
            session_id,
            opening,
            cancel,
            &events,
            output,
            tool_choice,
        )
        .await;
        match &result {
            Ok(outcome) => events.emit(RuntimeEvent::Final {
                session_id: outcome.session_id.clone(),
                text: outcome.final_text.clone(),
                turns: outcome.turns,
                usage: outcome.usage,
                cost: outcome.cost,
                output: outcome.output.clone(),
            }),
            Err(error) => events.emit(RuntimeEvent::Error {
                kind: error.kind().to_owned(),
                message: error.to_string(),
            }),
        }
        result
    }

    /// The messages of a session: the stored ones with memory, else the process copy.
    ///
    /// # Errors
    /// [`RuntimeError::Memory`] when reading memory fails.
    pub async fn session_messages(
        &self,
        session_id: &SessionId,
    ) -> Result<Vec<Message>, RuntimeError> {
        self.inner.sessions.messages(session_id).await
    }

    /// Appends messages to a session without running the loop (e.g. importing an
    /// earlier conversation). Tool results are stored as given — scrub them first.
    ///
    /// Takes the session's lease like a run.
    ///
    /// # Errors
    /// [`RuntimeError::Memory`] when storing fails, [`RuntimeError::SessionBusy`] when
    /// another run holds the session.
    pub async fn append_messages(
        &self,
        session_id: &SessionId,
        messages: Vec<Message>,
    ) -> Result<(), RuntimeError> {
        let cancel = CancellationToken::new();
        let sessions = &self.inner.sessions;
        let mut state = sessions.open(session_id, &cancel).await?;
        let mut stored = Ok(());
        for message in messages {
            stored = sessions
                .append(session_id, &mut state, message)
                .await
                .map(drop);
            if stored.is_err() {
                break;
            }
        }
        sessions.close(session_id, &mut state);
        state.release().await;
        stored
    }

    /// Forgets the process copy of a session (the only copy without memory).
    pub fn forget_session(&self, session_id: &SessionId) {
        self.inner.sessions.forget(session_id);
    }
}
