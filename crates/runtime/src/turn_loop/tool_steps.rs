//! The tool steps of a turn: the model's calls run as one batch and their results
//! stored before the next provider call (or the run suspended when consent was
//! deferred), and the executor's start-constraint and exit-requirement batches.

use oxydra_types::{FinishReason, Message, RuntimeEvent, RuntimeProgressKind, ToolCall};
use tracing::Span;

use super::{Run, cut_call};
use crate::context::ResultCap;
use crate::error::RuntimeError;
use crate::events::EventSink;
use crate::runtime_inner::RuntimeInner;
use crate::session_state::SessionState;
use crate::tool_dispatch::{BatchKind, Dispatch};
use crate::turn_state::TurnState;

impl<'a> Run<'a> {
    /// The tool dispatch of this run's current turn.
    pub(super) fn dispatch(&self, state: &SessionState) -> Dispatch<'a> {
        let inner: &'a RuntimeInner = self.inner;
        // The system prompt's own untrusted text (project instructions) is read before
        // every batch, a person's decision since notwithstanding: it stays in context.
        for source in &inner.system_prompt_sources {
            state.provenance.record(source);
        }
        Dispatch {
            written: crate::media_guard::model_written(
                state.window.messages(),
                inner.executor.registry(),
            ),
            provenance: state.provenance.clone(),
            intents: inner.sessions.memory().map(|memory| {
                let journal = crate::intent_journal::MemoryIntentJournal::for_batch(
                    std::sync::Arc::clone(memory),
                    state,
                );
                std::sync::Arc::new(journal) as std::sync::Arc<dyn oxydra_executor::IntentJournal>
            }),
            executor: &inner.executor,
            scrubber: &inner.scrubber,
            session_id: self.session_id,
            workspace_root: &inner.workspace_root,
            session_run: self.session_run,
            timeout: self.inner.limits.turn_timeout,
            cancel: self.cancel,
            events: self.events,
            result_cap: ResultCap::for_prompt(
                inner.budget,
                &inner.schema_tokens,
                self.system_prompt.as_deref(),
            ),
        }
    }

    /// Runs the tool calls as one batch, then stores every (scrubbed) result, in
    /// request order, before the next provider call. A last call the output-token limit
    /// cut off (`finish` is `Length`) is not run: it gets a failed result. When the
    /// broker deferred a call's consent, only the results before it are stored and the
    /// run ends waiting for approval ([`RuntimeError::AwaitingApproval`]).
    pub(super) async fn run_and_persist_tools(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        all_calls: &[ToolCall],
        finish: &FinishReason,
    ) -> Result<(), RuntimeError> {
        let (calls, cut) = cut_call::split_cut_call(all_calls, finish);
        self.enter(span, TurnState::ToolExecution);
        self.events.progress(
            RuntimeProgressKind::ToolExecution {
                tool_names: calls.iter().map(|call| call.name.clone()).collect(),
            },
            self.turn,
        );
        let capturing = self.capture_before(calls).await;
        let dispatch = self.dispatch(state);
        let (_, mut outcome) = dispatch
            .run(BatchKind::Calls, calls, &mut self.process)
            .await;
        if capturing {
            self.capture_after(calls).await;
        }
        if let Some(call) = cut {
            tracing::warn!(tool = %call.name, "the output-token limit cut a tool call off");
            self.events.emit(RuntimeEvent::ToolFailed {
                call_id: call.id.clone(),
                name: call.name.clone(),
                error: cut_call::cut_call_error(),
            });
            outcome.results.push(cut_call::cut_call_result(call));
        }
        let waiting = outcome.waiting.take();
        if let Some(waiting) = &waiting {
            // The waiting calls get their results when the run resumes.
            outcome.results.truncate(waiting.from);
        }
        let inner: &'a RuntimeInner = self.inner;
        inner
            .sessions
            .append_many(self.session_id, state, outcome.results)
            .await?;
        match (outcome.ended, waiting) {
            (Some(error), _) => Err(self.fail(span, error)),
            (None, Some(waiting)) => Err(self.suspend(span, waiting)),
            (None, None) => Ok(()),
        }
    }

    /// Before a batch that may change the workspace: the scan it is compared with
    /// (taken at the turn's first such batch). Returns whether the batch is captured.
    async fn capture_before(&mut self, calls: &[ToolCall]) -> bool {
        let inner: &'a RuntimeInner = self.inner;
        let (Some(_), Some(memory)) = (&inner.checkpoints, inner.sessions.memory()) else {
            return false;
        };
        if !crate::turn_capture::changing(inner.executor.registry(), calls) {
            return false;
        }
        if self.capture.is_some() {
            return true;
        }
        let (turn, before) =
            match crate::checkpoints::current_turn(memory.as_ref(), self.session_id).await {
                Ok(found) => found,
                Err(error) => {
                    tracing::warn!(%error, "the turn could not be found: no checkpoint");
                    return false;
                }
            };
        let Some(settings) = &inner.checkpoints else {
            return false;
        };
        self.capture = crate::turn_capture::TurnCapture::begin(
            inner.workspace_root.clone(),
            &settings.config,
            turn,
            before,
        )
        .await;
        self.capture
            .as_ref()
            .is_some_and(|capture| capture.is_turn(turn))
    }

    /// After a captured batch: what it changed, stored as the turn's checkpoint.
    async fn capture_after(&mut self, calls: &[ToolCall]) {
        let inner: &'a RuntimeInner = self.inner;
        if let (Some(settings), Some(capture)) = (&inner.checkpoints, self.capture.as_mut()) {
            capture
                .after_batch(
                    settings,
                    inner.executor.registry(),
                    inner.workspace_root.clone(),
                    self.session_id,
                    calls,
                    &inner.scrubber,
                )
                .await;
        }
    }

    /// Runs the executor's start-constraint or exit-requirement tools; their calls are
    /// stored as an assistant message followed by their results, like the model's.
    pub(super) async fn constraint_batch(
        &mut self,
        state: &mut SessionState,
        kind: BatchKind,
    ) -> Result<(), RuntimeError> {
        let dispatch = self.dispatch(state);
        let (calls, outcome) = dispatch.run(kind, &[], &mut self.process).await;
        if !calls.is_empty() {
            let inner: &'a RuntimeInner = self.inner;
            let sessions = &inner.sessions;
            // The synthetic call and its results are stored together, in one
            // transaction: no crash can leave the call without its results.
            let mut messages = Vec::with_capacity(outcome.results.len() + 1);
            messages.push(Message::assistant_with_tool_calls(None, calls));
            messages.extend(outcome.results);
            sessions
                .append_many(self.session_id, state, messages)
                .await?;
        }
        match outcome.ended {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}
