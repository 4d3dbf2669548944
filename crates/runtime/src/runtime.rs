//! `AgentRuntime`: the entry points of a session run.

use std::sync::Arc;

use oxydra_executor::ToolExecutor;
use oxydra_types::{Message, RuntimeEvent, SessionId};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::approvals::PendingApproval;
use crate::awaiting_calls::unanswered_calls;
use crate::error::RuntimeError;
use crate::events::{EventSink, RunEvents};
use crate::limits::RuntimeLimits;
use crate::runtime_inner::RuntimeInner;
use crate::session_outcome::SessionOutcome;
use crate::turn_loop::{self, RunOptions};

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
    /// The model the runtime asks.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The budgets.
    pub fn limits(&self) -> &RuntimeLimits {
        &self.inner.limits
    }

    /// The session checkpoints this runtime records (`None` without
    /// [`checkpoints`](crate::AgentRuntimeBuilder::checkpoints) and memory): list a
    /// session's, undo, rewind, fork, diff.
    pub fn checkpoints(&self) -> Option<crate::Checkpoints> {
        let settings = self.inner.checkpoints.as_ref()?;
        let memory = self.inner.sessions.memory()?;
        Some(
            crate::Checkpoints::new(settings.store.clone(), memory.clone(), &settings.config)
                .with_scrubber(self.inner.scrubber.clone())
                .session_wait(self.inner.sessions.lease_wait()),
        )
    }

    /// The scrubber every output of this runtime passes (its patterns, the known
    /// secrets and handles' values, and a memo of the texts it scrubbed last). A sink
    /// that scrubs the runtime's events again should use this one: a text the runtime
    /// already found clean then costs a hash and a compare instead of a scan.
    pub fn scrubber(&self) -> &oxydra_scrubbing::Scrubber {
        &self.inner.scrubber
    }

    /// The tool executor.
    pub fn executor(&self) -> &ToolExecutor {
        &self.inner.executor
    }

    /// What the runtime changed because its model is small (see the
    /// [`SmallModelDefaults`](crate::SmallModelDefaults)): empty for other models.
    pub fn small_model_defaults(&self) -> &crate::SmallModelDefaults {
        &self.inner.small_model
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
    /// valid answer came within `max_turns`; [`RuntimeError::AwaitingApproval`] when a
    /// call waits for a person (the long form gives that as an outcome).
    pub async fn run_typed<T>(&self, prompt: impl Into<String>) -> Result<T, RuntimeError>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let (value, _) = self
            .session(&SessionId::generate())
            .prompt(prompt)
            .output::<T>()
            .await?
            .into_result()?;
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
        .with_hooks(self.inner.executor.hooks().clone())
    }

    /// Runs the turn loop for one request and ends its events with `final` or `error`.
    pub(crate) async fn run_with(
        &self,
        session_id: &SessionId,
        opening: turn_loop::Opening,
        cancel: &CancellationToken,
        events: RunEvents,
        options: RunOptions<'_>,
    ) -> Result<SessionOutcome, RuntimeError> {
        let result = match options.used.validate() {
            Ok(()) => {
                turn_loop::run(&self.inner, session_id, opening, cancel, &events, options).await
            }
            Err(error) => Err(error),
        };
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

    /// Condenses session `session_id`'s conversation now, as the rolling summary does
    /// when the context fills up: every turn but the newest (and the latest user
    /// message) goes into the summary sent in their place; the stored messages stay.
    /// One provider call and no turn; it takes the session's lease like a run. What a
    /// chat's `/compact` does.
    ///
    /// # Errors
    /// [`RuntimeError::SessionBusy`] when another run holds the session;
    /// [`RuntimeError::Config`] when the model gave no usable summary (the conversation
    /// is unchanged); [`RuntimeError::Cancelled`]; the store's failure.
    pub async fn compact(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<crate::Compacted, RuntimeError> {
        let events = self.run_events(None, None);
        let options = RunOptions {
            output: None,
            tool_choice: None,
            used: crate::UsedBudget::default(),
            ledger: None,
        };
        let outcome = turn_loop::run(
            &self.inner,
            session_id,
            turn_loop::Opening::Compact,
            cancel,
            &events,
            options,
        )
        .await?;
        Ok(crate::Compacted {
            summary: Some(outcome.final_text).filter(|text| !text.is_empty()),
            usage: outcome.usage,
            cost: outcome.cost,
        })
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

    /// The approvals session `session_id` waits for: those a run of this runtime
    /// ended waiting for ([`RunOutcome::AwaitingApproval`](crate::RunOutcome)) whose
    /// calls still wait in the stored conversation, in the order the model asked for
    /// them; empty when nothing waits. Nothing is resumed, run or stored: decide them
    /// with [`RunRequest::decide`](crate::RunRequest::decide).
    ///
    /// The requests are known to the runtime that ran the waiting run (a runtime of
    /// another process lists none of them: whoever starts runs there keeps them, as the
    /// coordinator does). Without memory it waits for a run of the session in progress.
    ///
    /// # Errors
    /// [`RuntimeError::Memory`] when reading memory fails.
    pub async fn pending_approvals(
        &self,
        session_id: &SessionId,
    ) -> Result<Vec<PendingApproval>, RuntimeError> {
        let messages = self.inner.sessions.messages(session_id).await?;
        let waiting = unanswered_calls(messages.iter());
        Ok(self.inner.pending_approvals.of(session_id, &waiting))
    }

    /// Forgets the process copy of a session (the only copy without memory).
    pub fn forget_session(&self, session_id: &SessionId) {
        self.inner.sessions.forget(session_id);
    }
}
