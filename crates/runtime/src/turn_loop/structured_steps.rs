//! The steps of a run that must end in a structured answer (see
//! [`OutputSchema`]): `final_answer` calls checked beside the other calls, and the
//! answer that ends the run.
//!
//! Each `final_answer` call is reported like a tool call: `tool_started`, then
//! `tool_completed` when it is accepted (or ignored after an accepted one) or
//! `tool_failed` with what the model is told, so every retry shows in the events.
//! When another call of the turn waits for a person's approval, the run ends waiting
//! (as an untyped run does) and no answer of that turn is accepted: the model wrote it
//! before it knew how the waiting call ends, so it is asked to answer again.

use oxydra_types::{
    Message, RuntimeEvent, RuntimeProgressKind, SafetyTier, TOOL_FAILURE_PREFIX, ToolCall, Usage,
};
use tracing::Span;

use super::{Run, Step};
use crate::error::RuntimeError;
use crate::events::EventSink;
use crate::runtime_inner::RuntimeInner;
use crate::session_state::SessionState;
use crate::structured_output::{FINAL_ANSWER_TOOL, OutputSchema};
use crate::tool_dispatch::BatchKind;
use crate::turn_state::TurnState;

/// Whether a batch's `final_answer` calls may end the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answers {
    /// Checked: the first that passes ends the run.
    Check,
    /// Sent back: another call of their turn waited for a person.
    Held,
}

/// What the model reads of an answer given beside a call that waited for approval.
fn held_answer() -> String {
    format!(
        "{TOOL_FAILURE_PREFIX}: not accepted: a call of the same turn waited for a person's \
         approval; now that its result is in, call `{FINAL_ANSWER_TOOL}` again"
    )
}

impl<'a> Run<'a> {
    /// A turn of a run that must end in a structured answer: `final_answer` calls are
    /// checked here (the other calls run as usual, results stored in request order);
    /// the first that passes ends the run, failures go back to the model. A text
    /// answer counts when it is valid JSON of the schema, and is sent back otherwise.
    pub(super) async fn structured_turn(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        usage: Usage,
        text: String,
        calls: &[ToolCall],
        output: &OutputSchema,
    ) -> Result<Step, RuntimeError> {
        let inner: &'a RuntimeInner = self.inner;
        if calls.is_empty() {
            return match output.check_text(&text) {
                Ok(value) => self.yield_structured(state, span, usage, value).await,
                Err(problem) => {
                    inner
                        .sessions
                        .append(self.session_id, state, OutputSchema::nudge(&problem))
                        .await?;
                    self.events.turn_completed(self.turn, usage);
                    Ok(Step::Continue)
                }
            };
        }
        match self
            .structured_calls(state, span, calls, output, Answers::Check)
            .await?
        {
            Some(value) => self.yield_structured(state, span, usage, value).await,
            None => {
                self.events.turn_completed(self.turn, usage);
                Ok(Step::Continue)
            }
        }
    }

    /// Runs a batch of a structured run: the calls other than `final_answer` through
    /// the executor, the `final_answer` ones checked (when `answers` allows); stores
    /// every result in request order and returns the accepted answer, if any.
    ///
    /// When a call waits for a person, only the results before the first waiting call
    /// are stored (the rest wait with it) and the run ends waiting for approval
    /// ([`RuntimeError::AwaitingApproval`]); no answer of the batch is accepted.
    pub(super) async fn structured_calls(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        calls: &[ToolCall],
        output: &OutputSchema,
        answers: Answers,
    ) -> Result<Option<serde_json::Value>, RuntimeError> {
        let inner: &'a RuntimeInner = self.inner;
        let others: Vec<ToolCall> = calls
            .iter()
            .filter(|call| call.name != FINAL_ANSWER_TOOL)
            .cloned()
            .collect();
        let mut other_results = Vec::new().into_iter();
        let mut ended = None;
        let mut waiting = None;
        if !others.is_empty() {
            self.enter(span, TurnState::ToolExecution);
            self.events.progress(
                RuntimeProgressKind::ToolExecution {
                    tool_names: others.iter().map(|call| call.name.clone()).collect(),
                },
                self.turn,
            );
            let (_, mut outcome) = self
                .dispatch(state)
                .run(BatchKind::Calls, &others, &mut self.process)
                .await;
            waiting = outcome.waiting.take();
            other_results = outcome.results.into_iter();
            ended = outcome.ended;
        }
        // The first call (in request order) that waits; it and the calls after it get
        // their results when the run resumes.
        let stop = waiting.as_ref().map(|waiting| {
            others
                .get(waiting.from)
                .and_then(|first| calls.iter().position(|call| call.id == first.id))
                .unwrap_or(calls.len())
        });
        let answers = match waiting {
            Some(_) => Answers::Held,
            None => answers,
        };
        let mut answer = None;
        let mut results = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            if stop.is_some_and(|stop| index >= stop) {
                break;
            }
            if call.name != FINAL_ANSWER_TOOL {
                results.extend(other_results.next());
                continue;
            }
            let content = self.answer_call(call, output, answers, &mut answer);
            results.push(Message::tool_result(
                call.id.clone(),
                FINAL_ANSWER_TOOL,
                content,
            ));
        }
        inner
            .sessions
            .append_many(self.session_id, state, results)
            .await?;
        if let Some(error) = ended {
            return Err(self.fail(span, error));
        }
        if let Some(waiting) = waiting {
            return Err(self.suspend(span, waiting));
        }
        Ok(answer)
    }

    /// Checks one `final_answer` call (the first that passes becomes `answer`),
    /// reports it as a tool call, and returns what the model reads of it.
    fn answer_call(
        &self,
        call: &ToolCall,
        output: &OutputSchema,
        answers: Answers,
        answer: &mut Option<serde_json::Value>,
    ) -> String {
        self.events.emit(RuntimeEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            tier: SafetyTier::ReadOnly,
            arguments: call.arguments.clone(),
        });
        let checked = match (answers, &*answer) {
            (Answers::Held, _) => Err(held_answer()),
            (Answers::Check, Some(_)) => {
                Ok("Ignored: an earlier final answer in this turn was accepted.".to_owned())
            }
            (Answers::Check, None) => output.check_call(call).map(|value| {
                *answer = Some(value);
                "Final answer accepted.".to_owned()
            }),
        };
        match checked {
            Ok(content) => {
                self.events.emit(RuntimeEvent::ToolCompleted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    duration_ms: 0,
                    output: content.clone(),
                });
                content
            }
            Err(problem) => {
                self.events.emit(RuntimeEvent::ToolFailed {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    error: problem.clone(),
                });
                problem
            }
        }
    }

    /// Ends the loop with a structured answer; its JSON text is the final text.
    async fn yield_structured(
        &mut self,
        state: &mut SessionState,
        span: &Span,
        usage: Usage,
        value: serde_json::Value,
    ) -> Result<Step, RuntimeError> {
        let text = value.to_string();
        self.answer = Some(value);
        self.yield_answer(state, span, usage, text).await
    }
}
