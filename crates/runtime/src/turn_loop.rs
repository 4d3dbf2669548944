//! The turn loop, step for step:
//! refuse a prompt that cannot fit the budget → persist the user message (and record the
//! session's meta, see [`session_meta`]) → turn and cost check, the turn counted (and
//! recorded with the run's [`UsageLedger`], if any) → maybe summarise → prepare the context →
//! request the provider → add and record its usage, enforce the cost budget → persist the
//! assistant message →
//! no tool calls ⇒ yield → run the tools → scrub and persist the results → loop.
//!
//! Each step is one call in [`Run::turn_once`]. The context steps (summarise, prepare,
//! recover from an overflow) ask the session's context window (see [`crate::context`]);
//! should the provider still find the prompt too long, the window recounts exactly,
//! tightens the run's budget and the call is retried once.

use oxydra_executor::{ProcessToolState, SessionRunId};
use oxydra_memory::SessionMeta;
use oxydra_provider::ProviderError;
use oxydra_types::{
    CallId, ContentPart, FinishReason, Message, MessageRole, RuntimeProgressKind, SessionId,
    Source, ToolCall, Usage,
};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span, field};

use crate::budget::Budget;
use crate::call_ids;
use crate::context::{PromptFit, WindowSettings};
use crate::error::RuntimeError;
use crate::event_scrub::log_safe;
use crate::events::RunEvents;
use crate::gen_ai;
use crate::model_hooks;
use crate::provider_call::{self, CallOptions, ProviderCall};
use crate::runtime_inner::RuntimeInner;
use crate::session_outcome::SessionOutcome;
use crate::session_state::SessionState;
use crate::small_model;
use crate::structured_output::OutputSchema;
use crate::tool_choice::{ToolChoicePolicy, TurnInfo};
use crate::tool_dispatch::BatchKind;
use crate::turn_state::{TurnState, TurnTracker};
use crate::usage_ledger::UsageLedger;

mod approval_steps;
mod budget_steps;
mod context_steps;
mod cut_call;
mod retrieval_steps;
mod run_request_parts;
mod session_meta;
mod structured_steps;
mod tool_steps;

pub(crate) use run_request_parts::{Opening, RunOptions};

/// Runs one session: locks it, takes its lease and loads it, runs the loop, releases it.
pub(crate) async fn run(
    inner: &RuntimeInner,
    session_id: &SessionId,
    opening: Opening,
    cancel: &CancellationToken,
    events: &RunEvents,
    options: RunOptions<'_>,
) -> Result<SessionOutcome, RuntimeError> {
    let RunOptions {
        output,
        tool_choice,
        used,
        ledger,
    } = options;
    // A small model's run picks its own first choice from its opening message.
    let per_run;
    let tool_choice: &dyn ToolChoicePolicy = match tool_choice {
        Some(policy) => policy,
        None if inner.small_model.per_run_tool_choice => {
            let opening_message = match &opening {
                Opening::Prompt(text, ..) => Some(Message::user(text.as_str())),
                Opening::Continue | Opening::Decided(_) | Opening::Compact => None,
            };
            per_run = small_model::run_policy(
                inner.provider.as_ref(),
                opening_message.as_ref(),
                &inner.tool_schemas,
            );
            &per_run
        }
        None => inner.tool_choice.as_ref(),
    };
    let span = tracing::info_span!(
        "session",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = %session_id,
        gen_ai.provider.name = gen_ai::provider_name(inner.provider.name()),
        gen_ai.request.model = %inner.model,
    );
    async {
        let awaiting: Vec<CallId> = match &opening {
            Opening::Decided(decisions) => decisions
                .iter()
                .map(|(pending, _)| pending.call_id.clone())
                .collect(),
            Opening::Prompt(..) | Opening::Continue | Opening::Compact => Vec::new(),
        };
        let mut state = inner
            .sessions
            .open_awaiting(session_id, cancel, &awaiting)
            .await?;
        if let Some(memory) = inner.sessions.memory() {
            let settled = crate::interrupted_calls::settle(
                memory,
                session_id,
                &state,
                &inner.executor,
                &inner.workspace_root,
                events,
            )
            .await?;
            if !settled.is_empty() {
                inner
                    .sessions
                    .store_settled(session_id, &mut state, settled, cancel, &awaiting)
                    .await?;
            }
        }
        let own = session_meta::Own {
            model: &inner.model,
            system_prompt: inner.system_prompt.as_deref(),
            agent: inner.agent_name.as_deref(),
            workspace: inner.workspace_root.to_str(),
            keep_stored: inner.keep_session_system_prompt,
        };
        let profile = session_meta::resolve(&own, state.stored_meta(), &inner.scrubber);
        let mut run = Run {
            inner,
            session_id,
            cancel,
            events,
            turn: used.turns,
            usage: used.usage,
            cost: used.cost,
            ledger,
            // A resume with decisions goes on where the run that asked ended.
            tracker: match &opening {
                Opening::Decided(_) => TurnTracker::resumed_after_approval(),
                Opening::Prompt(..) | Opening::Continue | Opening::Compact => TurnTracker::new(),
            },
            process: inner.executor.new_process_state(),
            session_run: SessionRunId::next(),
            summary_failed: false,
            output,
            answer: None,
            system_prompt: profile.system_prompt,
            meta: profile.record,
            tool_choice,
            tool_calls: 0,
            capture: None,
        };
        let result = match opening {
            Opening::Prompt(user_message, parts, sources) => {
                run.start(&mut state, user_message, parts, sources).await
            }
            Opening::Decided(decisions) => run.resume_decided(&mut state, decisions).await,
            Opening::Continue => run.resume(&mut state).await,
            Opening::Compact => run.compact_now(&mut state).await,
        };
        inner.executor.complete_session_run(run.session_run);
        // What the session waits for, to list without resuming it; an error other than
        // waiting leaves the record (the listing keeps only calls still waiting).
        match &result {
            Err(RuntimeError::AwaitingApproval { pending }) => {
                inner.pending_approvals.record(session_id, pending.clone())
            }
            Ok(_) => inner.pending_approvals.clear(session_id),
            Err(_) => {}
        }
        inner.sessions.close(session_id, &mut state);
        state.release().await;
        result
    }
    .instrument(span)
    .await
}

enum Step {
    Continue,
    Done(String),
}

struct Run<'a> {
    inner: &'a RuntimeInner,
    session_id: &'a SessionId,
    cancel: &'a CancellationToken,
    events: &'a RunEvents,
    /// Provider calls of the loop so far (from the request's already-used turns).
    turn: usize,
    /// Tokens so far (from the request's already-used tokens).
    usage: Usage,
    /// Cost so far (from the request's already-used cost).
    cost: f64,
    /// Where the totals are recorded as they grow.
    ledger: Option<&'a dyn UsageLedger>,
    tracker: TurnTracker,
    process: ProcessToolState,
    session_run: SessionRunId,
    /// A summarisation failed in this run; truncation alone keeps the prompt in budget.
    summary_failed: bool,
    /// The schema the final answer must satisfy, when the caller asked for one.
    output: Option<&'a OutputSchema>,
    /// The structured answer, once one passed.
    answer: Option<serde_json::Value>,
    /// The system prompt this run sends.
    system_prompt: Option<String>,
    /// The session meta to record once the run has stored to the session (`None`:
    /// recorded already).
    meta: Option<SessionMeta>,
    /// Picks each turn's tool choice.
    tool_choice: &'a dyn ToolChoicePolicy,
    /// The model's tool calls in this run so far.
    tool_calls: usize,
    /// The checkpoint of this run's turn, once a changing call was met.
    capture: Option<crate::turn_capture::TurnCapture>,
}

impl<'a> Run<'a> {
    /// Step 1, then the loop: the user message is scrubbed, searched for snippets,
    /// stored and indexed; the window readied for the run; start constraints run.
    async fn start(
        &mut self,
        state: &mut SessionState,
        user_message: String,
        parts: Vec<ContentPart>,
        sources: Vec<Source>,
    ) -> Result<SessionOutcome, RuntimeError> {
        // The prompt is stored and sent to the provider: no secret in it goes either way.
        let user_message = match self.inner.scrubber.scrub(&user_message) {
            scrubbed if scrubbed.is_clean() => user_message,
            scrubbed => scrubbed.into_owned(),
        };
        // A prompt that cannot fit even alone is refused before it is stored or sent.
        let fit = PromptFit {
            system_prompt: self.system_prompt.as_deref(),
            schema_tokens: &self.inner.schema_tokens,
            budget: self.inner.budget,
        };
        let user_message = Message::user(user_message)
            .with_parts(parts)
            .with_sources(sources);
        fit.check(&user_message, self.cancel, self.inner.limits.turn_timeout)
            .await?;
        // Search before the new prompt is indexed, so it does not find itself.
        let snippets = self.retrieve(state, user_message.text()).await?;
        self.persist_user_message(state, user_message).await?;
        self.record_meta().await?;
        state.window.begin_run(self.window_settings(snippets));
        self.constraint_batch(state, BatchKind::Start).await?;
        self.turns(state).await
    }

    /// Continues the stored conversation without a new user message: a conversation
    /// that already ends with the model's answer is done (nothing is sent or stored);
    /// otherwise the loop runs on from the repaired history (orphaned tool calls got
    /// their `interrupted` results when the session was loaded).
    async fn resume(&mut self, state: &mut SessionState) -> Result<SessionOutcome, RuntimeError> {
        let answered = state.window.messages().last().and_then(|last| {
            (last.role == MessageRole::Assistant && last.tool_calls.is_empty())
                .then(|| last.text().to_owned())
        });
        if let Some(final_text) = answered {
            return Ok(SessionOutcome {
                session_id: self.session_id.clone(),
                final_text,
                turns: self.turn,
                usage: self.usage,
                cost: self.cost,
                output: None,
            });
        }
        self.record_meta().await?;
        state.window.begin_run(self.window_settings(None));
        self.turns(state).await
    }

    /// Condenses the conversation now: the window readied as for a run, then one
    /// summarisation call. No turn is counted and nothing of the conversation is sent
    /// but to the summariser.
    async fn compact_now(
        &mut self,
        state: &mut SessionState,
    ) -> Result<SessionOutcome, RuntimeError> {
        state.window.begin_run(self.window_settings(None));
        let summary = self.compact(state, &Span::current()).await?;
        Ok(SessionOutcome {
            session_id: self.session_id.clone(),
            final_text: summary.unwrap_or_default(),
            turns: self.turn,
            usage: self.usage,
            cost: self.cost,
            output: None,
        })
    }

    /// Records the session's meta, once the session is stored, unless it is unchanged.
    async fn record_meta(&mut self) -> Result<(), RuntimeError> {
        if let Some(meta) = self.meta.take() {
            self.inner
                .sessions
                .record_meta(self.session_id, &meta)
                .await?;
        }
        Ok(())
    }

    /// Stores the user message (its parts with it) and indexes its text for retrieval.
    async fn persist_user_message(
        &mut self,
        state: &mut SessionState,
        user_message: Message,
    ) -> Result<(), RuntimeError> {
        let inner: &'a RuntimeInner = self.inner;
        let text = user_message.text().to_owned();
        inner
            .sessions
            .append(self.session_id, state, user_message)
            .await?;
        if !self.index(&text).await {
            return Err(RuntimeError::Cancelled);
        }
        Ok(())
    }

    /// What the session's context window needs for this run.
    fn window_settings(&self, snippets: Option<Message>) -> WindowSettings {
        let inner = self.inner;
        let mut tools = inner.tool_schemas.clone();
        if let Some(output) = self.output {
            tools.push(output.tool_schema());
        }
        WindowSettings {
            model: inner.model.clone(),
            tools,
            schema_tokens: inner.schema_tokens.clone(),
            max_output_tokens: inner.limits.max_output_tokens,
            system_prompt: self.system_prompt.clone(),
            snippets,
            budget: inner.budget,
            summary_trigger_ratio: inner.limits.summary_trigger_ratio,
        }
    }

    async fn call_provider(&self, state: &SessionState) -> Result<ProviderCall, RuntimeError> {
        self.events
            .progress(RuntimeProgressKind::ProviderCall, self.turn);
        let inner: &RuntimeInner = self.inner;
        let site = model_hooks::RequestSite {
            session_id: self.session_id,
            turn: self.turn,
            cancel: self.cancel,
            events: self.events,
        };
        let hooked =
            model_hooks::apply(inner.executor.hooks(), state.window.request(), site).await?;
        provider_call::request_response(
            inner.provider.as_ref(),
            hooked.as_ref().unwrap_or_else(|| state.window.request()),
            CallOptions {
                streaming: inner.streaming,
                timeout: inner.limits.turn_timeout,
                events: Some(self.events),
                price: &|model, usage| inner.price(model, usage),
            },
            self.cancel,
        )
        .await
    }

    fn enter(&mut self, span: &Span, next: TurnState) {
        span.record("state", next.as_str());
        self.tracker.enter(self.turn, next);
    }

    fn fail(&mut self, span: &Span, error: RuntimeError) -> RuntimeError {
        if matches!(error, RuntimeError::Cancelled) {
            self.enter(span, TurnState::Cancelled);
        }
        error
    }

    async fn turns(&mut self, state: &mut SessionState) -> Result<SessionOutcome, RuntimeError> {
        let max_turns = self.inner.limits.max_turns;
        loop {
            if self.cancel.is_cancelled() {
                let span = Span::current();
                return Err(self.fail(&span, RuntimeError::Cancelled));
            }
            if self.turn >= max_turns {
                return Err(RuntimeError::budget(
                    Budget::MaxTurns,
                    format!("no final answer after {max_turns} turns"),
                ));
            }
            // A run continued with its budget already spent makes no call.
            self.check_cost()?;
            self.turn += 1;
            // Counted before the call is made: a process dying during the call still
            // leaves it counted for whoever continues the run.
            if let Err(error) = self.record_usage().await {
                let span = Span::current();
                return Err(self.fail(&span, error));
            }
            let span = tracing::info_span!(
                "turn",
                turn = self.turn,
                max_turns,
                state = field::Empty,
                context_tokens = field::Empty,
                context_utilisation = field::Empty,
                dropped_messages = field::Empty,
                accumulated_cost = field::Empty,
            );
            let step = self
                .turn_once(state, &span)
                .instrument(span.clone())
                .await?;
            if let Step::Done(final_text) = step {
                return Ok(SessionOutcome {
                    session_id: self.session_id.clone(),
                    final_text,
                    turns: self.turn,
                    usage: self.usage,
                    cost: self.cost,
                    output: self.answer.take(),
                });
            }
        }
    }

    /// One turn, step for step (the user message is persisted and the turn checked
    /// before it).
    async fn turn_once(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<Step, RuntimeError> {
        self.maybe_summarise(state, span).await?;
        let prompt_tokens = self.prepare_context(state, span).await?;
        // A call that could cross the cost budget is not made, nor counted.
        if let Err(error) = self.check_call_cost(prompt_tokens) {
            self.turn = self.turn.saturating_sub(1);
            self.record_usage().await.map_err(|e| self.fail(span, e))?;
            return Err(error);
        }
        let choice = self
            .tool_choice
            .choose(TurnInfo::new(self.turn, self.tool_calls));
        state.window.set_tool_choice(choice);
        let call = self.request_provider(state, span).await?;
        self.account(&call, span).await?;
        let usage = call.response.usage;
        let finish = call.response.finish_reason;
        let (text, calls) = self
            .persist_assistant(state, call.response.message, span)
            .await?;
        if let Some(output) = self.output {
            return self
                .structured_turn(state, span, usage, text, &calls, output)
                .await;
        }
        if calls.is_empty() {
            if finish == FinishReason::Length {
                tracing::warn!("the output-token limit cut the answer off");
            }
            return self.yield_answer(state, span, usage, text).await;
        }
        // A call the output-token limit cut off is not run: it counts as no call, so a
        // policy that waits for the first call still waits.
        let (run, _) = cut_call::split_cut_call(&calls, &finish);
        self.tool_calls += run.len();
        self.run_and_persist_tools(state, span, &calls, &finish)
            .await?;
        if self.inner.executor.should_exit_loop(&self.process) {
            return self.yield_answer(state, span, usage, text).await;
        }
        self.events.turn_completed(self.turn, usage);
        Ok(Step::Continue)
    }

    /// Sends the prepared request; a "context length exceeded" is recovered from once
    /// (see [`Self::recover_from_overflow`]) and the call retried.
    async fn request_provider(
        &mut self,
        state: &mut SessionState,
        span: &Span,
    ) -> Result<ProviderCall, RuntimeError> {
        self.enter(span, TurnState::Streaming);
        let call = match self.call_provider(state).await {
            Err(RuntimeError::Provider(ProviderError::ContextLengthExceeded { message })) => {
                tracing::warn!(message = %log_safe(&message), "context length exceeded");
                self.recover_from_overflow(state, span).await?;
                self.call_provider(state).await
            }
            other => other,
        }
        .map_err(|error| self.fail(span, error))?;
        tracing::debug!(
            latency_ms = call.latency.as_millis() as u64,
            input_tokens = call.response.usage.input_tokens,
            output_tokens = call.response.usage.output_tokens,
            "provider answered"
        );
        Ok(call)
    }

    /// Stores the model's message, every tool call with an id of its own, and indexes
    /// its text; returns the text and the calls. Cancelled while indexing, a final
    /// answer ends the run as cancelled; tool calls still go to the dispatch, which
    /// gives each a result under the fired token.
    async fn persist_assistant(
        &mut self,
        state: &mut SessionState,
        mut message: Message,
        span: &Span,
    ) -> Result<(String, Vec<ToolCall>), RuntimeError> {
        // Every call must have its own id before it is stored or run.
        call_ids::make_unique(&mut message.tool_calls);
        let text = message.text().to_owned();
        let calls = message.tool_calls.clone();
        let inner: &'a RuntimeInner = self.inner;
        inner
            .sessions
            .append(self.session_id, state, message)
            .await?;
        let indexed = self.index(&text).await;
        if !indexed && calls.is_empty() {
            return Err(self.fail(span, RuntimeError::Cancelled));
        }
        Ok((text, calls))
    }

    /// Ends the loop with `text` as the final answer: the turn is completed and the
    /// executor's exit-requirement tools run.
    async fn yield_answer(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        usage: Usage,
        text: String,
    ) -> Result<Step, RuntimeError> {
        self.events.turn_completed(self.turn, usage);
        self.enter(span, TurnState::Yielding);
        self.constraint_batch(state, BatchKind::Exit).await?;
        Ok(Step::Done(text))
    }
}
