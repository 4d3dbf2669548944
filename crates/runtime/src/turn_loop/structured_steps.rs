//! The steps of a run that must end in a structured answer (see
//! [`OutputSchema`]): `final_answer` calls checked beside the other calls, and the
//! answer that ends the run.

use oxydra_types::{Message, RuntimeProgressKind, ToolCall, Usage};
use tracing::Span;

use super::{Run, Step};
use crate::error::RuntimeError;
use crate::runtime_inner::RuntimeInner;
use crate::session_state::SessionState;
use crate::structured_output::{FINAL_ANSWER_TOOL, OutputSchema};
use crate::tool_dispatch::BatchKind;
use crate::turn_state::TurnState;

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
        let others: Vec<ToolCall> = calls
            .iter()
            .filter(|call| call.name != FINAL_ANSWER_TOOL)
            .cloned()
            .collect();
        let mut other_results = Vec::new().into_iter();
        let mut ended = None;
        if !others.is_empty() {
            self.enter(span, TurnState::ToolExecution);
            self.events.progress(
                RuntimeProgressKind::ToolExecution {
                    tool_names: others.iter().map(|call| call.name.clone()).collect(),
                },
                self.turn,
            );
            let (_, outcome) = self
                .dispatch()
                .run(BatchKind::Calls, &others, &mut self.process)
                .await;
            other_results = outcome.results.into_iter();
            ended = outcome.ended;
        }
        let mut answer = None;
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            if call.name != FINAL_ANSWER_TOOL {
                results.extend(other_results.next());
                continue;
            }
            let content = match (&answer, output.check_call(call)) {
                (Some(_), _) => {
                    "Ignored: an earlier final answer in this turn was accepted.".to_owned()
                }
                (None, Ok(value)) => {
                    answer = Some(value);
                    "Final answer accepted.".to_owned()
                }
                (None, Err(problem)) => problem,
            };
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
        match answer {
            Some(value) => self.yield_structured(state, span, usage, value).await,
            None => {
                self.events.turn_completed(self.turn, usage);
                Ok(Step::Continue)
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
