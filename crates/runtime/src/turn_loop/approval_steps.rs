//! The steps of a run that waits for a person: ending the run when the broker deferred
//! consent ([`Run::suspend`]), and resuming it with the decisions
//! ([`Run::resume_decided`]): the waiting calls run (or are denied) first, with their
//! results stored after the ones stored before the run ended, then the loop goes on.

use oxydra_types::{FinishReason, RuntimeEvent};
use tracing::Span;

use super::Run;
use super::structured_steps::Answers;
use crate::approvals::{ApprovalDecision, PendingApproval, now_millis};
use crate::awaiting_calls::unanswered_calls;
use crate::error::RuntimeError;
use crate::events::EventSink;
use crate::session_outcome::SessionOutcome;
use crate::session_state::SessionState;
use crate::tool_dispatch::Waiting;
use crate::turn_state::TurnState;

/// What a `tool_failed` event says of a call held behind one that waits for approval.
const HELD_ERROR: &str = "not run yet: it waits behind a call that needs a person's approval, \
                          and runs when the run resumes";

impl Run<'_> {
    /// The error that ends a run whose batch has calls waiting for a person; each
    /// deferred call is announced with an `approval_requested` event and carries what
    /// the run used so far, for the resume to start from; each call held behind one
    /// (started, but not run) is closed with a `tool_failed` event saying it runs when
    /// the run resumes: every `tool_started` is closed. The loop enters
    /// [`TurnState::AwaitingApproval`], where the resume starts.
    pub(super) fn suspend(&mut self, span: &Span, waiting: Waiting) -> RuntimeError {
        self.enter(span, TurnState::AwaitingApproval);
        let scrubber = &self.inner.scrubber;
        let used = self.used();
        let pending: Vec<PendingApproval> = waiting
            .deferred
            .into_iter()
            .map(|deferred| {
                PendingApproval::new(
                    &deferred.call,
                    deferred.tier,
                    deferred.scope,
                    deferred.ttl,
                    scrubber,
                    used,
                )
                .with_reason(&deferred.reason, scrubber)
            })
            .collect();
        for approval in &pending {
            self.events.emit(RuntimeEvent::ApprovalRequested {
                approval_id: approval.approval_id.clone(),
                call_id: approval.call_id.clone(),
                name: approval.tool.clone(),
                tier: approval.tier,
                arguments: approval.arguments.clone(),
                scope: approval.scope.to_string(),
                requested_at: approval.requested_at,
                expires_at: approval.expires_at,
                reason: approval.reason.clone(),
            });
        }
        for call in &waiting.held {
            self.events.emit(RuntimeEvent::ToolFailed {
                call_id: call.id.clone(),
                name: call.name.clone(),
                error: HELD_ERROR.to_owned(),
            });
        }
        tracing::info!(
            waiting = pending.len(),
            held = waiting.held.len(),
            "the run waits for approval"
        );
        RuntimeError::AwaitingApproval { pending }
    }

    /// Resumes a run that ended waiting for approval: every decision must be for a call
    /// that still waits (else nothing happens and the run fails with
    /// [`RuntimeError::Config`]); a lapsed request is a denial. The waiting calls then
    /// run as one batch (a call without a decision is asked about again), their results
    /// are stored, and the loop continues.
    pub(super) async fn resume_decided(
        &mut self,
        state: &mut SessionState,
        decisions: Vec<(PendingApproval, ApprovalDecision)>,
    ) -> Result<SessionOutcome, RuntimeError> {
        let waiting = unanswered_calls(state.window.messages());
        if let Some((pending, _)) = decisions
            .iter()
            .find(|(pending, _)| !waiting.iter().any(|call| call.id == pending.call_id))
        {
            return Err(RuntimeError::Config(format!(
                "approval {} is for call {} of tool `{}`, which does not wait in session {}",
                pending.approval_id, pending.call_id, pending.tool, self.session_id
            )));
        }
        let executor = &self.inner.executor;
        let now = now_millis();
        for (pending, decision) in decisions {
            let decision = decision.effective(&pending, now);
            executor.decide_call(
                self.session_id,
                &pending.call_id,
                decision.verdict(&self.inner.scrubber),
            );
            let reason = match &decision {
                ApprovalDecision::Deny { reason } => reason.clone(),
                _ => None,
            };
            self.events.emit(RuntimeEvent::ApprovalDecided {
                approval_id: pending.approval_id,
                call_id: pending.call_id,
                name: pending.tool,
                decision: decision.as_str().to_owned(),
                reason,
            });
        }
        self.record_meta().await?;
        state.window.begin_run(self.window_settings(None));
        let span = Span::current();
        // In a structured run the waiting calls may hold `final_answer` calls: they are
        // sent back, as the model wrote them before it knew how the waiting calls end.
        let ran = match self.output {
            Some(output) => self
                .structured_calls(state, &span, &waiting, output, Answers::Held)
                .await
                .map(drop),
            None => {
                self.run_and_persist_tools(state, &span, &waiting, &FinishReason::ToolCalls)
                    .await
            }
        };
        // A decision whose call did not run (the batch ended early) must not outlive it.
        for call in &waiting {
            executor.forget_call_decision(self.session_id, &call.id);
        }
        ran?;
        self.turns(state).await
    }
}
