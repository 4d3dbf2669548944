//! `execute_batch`: every call of a turn, planned into concurrent read-only groups
//! and lone barriers, with events and results in request order.

use std::time::Instant;

use futures::future::join_all;
use oxydra_tools::ToolOutput;
use oxydra_types::{RuntimeEvent, SafetyTier, ToolCall};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::admission::{Admission, DedupeMode, Prepared, Reservation};
use crate::batch_planner::{PlanItem, Step, plan};
use crate::context::ExecutionContext;
use crate::error::ToolExecutionError;
use crate::events::ToolEventSink;
use crate::executor::ToolExecutor;
use crate::intent_journal::record_intent;
use crate::invoke::{Invocation, invoke};
use crate::record::{ToolBatchResult, ToolCallRecord};
use crate::rules::process_state::{ExecutionPhase, ProcessToolState};

/// Shared inputs of one batch run.
struct Run<'a> {
    calls: &'a [ToolCall],
    ctx: &'a ExecutionContext,
    events: &'a dyn ToolEventSink,
    bypass_start: bool,
}

/// Mutable outputs of one batch run.
struct Outputs {
    slots: Vec<Option<ToolCallRecord>>,
    continuation: bool,
    /// A call's consent was deferred: the calls after it are held, not run.
    deferred: bool,
}

/// What is kept of an admitted call while it runs, to record it afterwards.
struct Admitted {
    /// Its position in the batch.
    index: usize,
    tier: SafetyTier,
    /// The canonical dedupe key (empty when not needed).
    key: String,
    dedupe: DedupeMode,
    /// The call carried `"request_heartbeat": true`.
    heartbeat: bool,
    /// The rule state it holds until it has run.
    reservation: Reservation,
}

/// How many calls of a concurrent group may run at once: `max_parallel`, at least 1
/// and at most what a semaphore can hold (`Semaphore::new` panics above that).
fn parallel_permits(max_parallel: usize) -> usize {
    max_parallel.clamp(1, Semaphore::MAX_PERMITS)
}

/// The per-call limit: the executor's, or longer where the tool bounds its own calls
/// ([`oxydra_tools::Tool::max_execution_time`]) so that its own timeout fires first.
fn call_timeout(
    configured: std::time::Duration,
    tool: &dyn oxydra_tools::Tool,
) -> std::time::Duration {
    tool.max_execution_time()
        .map_or(configured, |own| own.max(configured))
}

/// The span of one call, with the GenAI conventions' tool attributes: named
/// `execute_tool {tool}`; a failure sets `error.type` to the error kind and the status
/// to error.
fn tool_span(call: &ToolCall, tier: Option<SafetyTier>) -> tracing::Span {
    tracing::info_span!(
        "tool_execution",
        otel.name = %format_args!("execute_tool {}", call.name),
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        tier = tier.map_or("unknown", SafetyTier::as_str),
        duration_ms = tracing::field::Empty,
        outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Build the record of a finished call, report it on its span and emit its event.
fn finish(
    call: &ToolCall,
    tier: Option<SafetyTier>,
    outcome: Result<ToolOutput, ToolExecutionError>,
    reused: bool,
    (started_at, finished_at): (Instant, Option<Instant>),
    span: &tracing::Span,
    events: &dyn ToolEventSink,
) -> ToolCallRecord {
    let finished_at = finished_at.unwrap_or_else(Instant::now);
    let duration = finished_at.saturating_duration_since(started_at);
    let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let label = match &outcome {
        Ok(_) if reused => "reused",
        Ok(_) => "ok",
        Err(error) => error.kind(),
    };
    span.record("duration_ms", duration_ms);
    span.record("outcome", label);
    if outcome.is_err() {
        span.record("error.type", label);
        span.record("otel.status_code", "error");
    }
    match &outcome {
        Ok(output) => {
            tracing::debug!(parent: span, "tool call finished");
            let output = if reused {
                format!("{}{}", crate::record::REUSED_OUTPUT_MARKER, output.content)
            } else {
                output.content.clone()
            };
            events.emit(RuntimeEvent::ToolCompleted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                duration_ms,
                output,
            });
        }
        // A call waiting for a person is reported by the runtime (`approval_requested`).
        Err(error) if error.waits_for_approval() => {
            tracing::debug!(parent: span, kind = error.kind(), "tool call waits for approval");
        }
        Err(error) => {
            let error = crate::record::error_text(error);
            tracing::debug!(parent: span, %error, "tool call failed");
            events.emit(RuntimeEvent::ToolFailed {
                call_id: call.id.clone(),
                name: call.name.clone(),
                error,
            });
        }
    }
    ToolCallRecord {
        call: call.clone(),
        tier,
        outcome,
        reused,
        started_at,
        finished_at,
        duration,
    }
}

impl ToolExecutor {
    /// Run a whole batch: contiguous read-only calls concurrently (at
    /// most `max_parallel` at once), side-effecting and privileged calls alone; the
    /// results come back in request order and no failure aborts the batch.
    ///
    /// Events: `ToolStarted` for every call in request order before any work begins
    /// (an unknown tool is reported with the `read_only` tier), then `ToolCompleted` or
    /// `ToolFailed` as each call really finishes.
    ///
    /// When the broker defers a call's consent
    /// ([`PermissionDecision::Defer`](crate::PermissionDecision::Defer)), that call's
    /// record is [`ToolExecutionError::ApprovalDeferred`] and every call after it that
    /// had not been admitted yet is [`ToolExecutionError::HeldForApproval`]; neither
    /// emits `ToolFailed`.
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        process: &mut ProcessToolState,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
    ) -> ToolBatchResult {
        self.run_calls(calls, process, ctx, events, false).await
    }

    pub(crate) async fn run_calls(
        &self,
        calls: &[ToolCall],
        process: &mut ProcessToolState,
        ctx: &ExecutionContext,
        events: &dyn ToolEventSink,
        bypass_start: bool,
    ) -> ToolBatchResult {
        let batch_start = Instant::now();
        let run = Run {
            calls,
            ctx,
            events,
            bypass_start,
        };
        let mut outputs = Outputs {
            slots: calls.iter().map(|_| None).collect(),
            continuation: false,
            deferred: false,
        };
        let mut prepared: Vec<Option<Prepared>> = Vec::with_capacity(calls.len());
        // Each call's tier (`None` for an unknown tool), by position.
        let mut tiers: Vec<Option<SafetyTier>> = Vec::with_capacity(calls.len());
        let mut failures = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            match self.prepare_hooked(call, ctx, events).await {
                // A heartbeat request counts only once the call has produced output.
                Ok(ready) => {
                    tiers.push(Some(ready.tier));
                    prepared.push(Some(ready));
                }
                Err((tier, error)) => {
                    tiers.push(tier);
                    prepared.push(None);
                    failures.push((index, tier, error));
                }
            }
        }
        for (call, tier) in calls.iter().zip(&tiers) {
            events.emit(RuntimeEvent::ToolStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                tier: tier.unwrap_or(SafetyTier::ReadOnly),
                arguments: call.arguments.clone(),
            });
        }
        for (index, tier, error) in failures {
            if let (Some(call), Some(slot)) = (calls.get(index), outputs.slots.get_mut(index)) {
                let span = tool_span(call, tier);
                *slot = Some(finish(
                    call,
                    tier,
                    Err(error),
                    false,
                    (Instant::now(), None),
                    &span,
                    events,
                ));
            }
        }
        let items: Vec<PlanItem<'_>> = prepared
            .iter()
            .enumerate()
            .filter_map(|(index, ready)| {
                let ready = ready.as_ref()?;
                let call = calls.get(index)?;
                Some(PlanItem {
                    index,
                    tool: &call.name,
                    tier: ready.tier,
                    key: (ready.dedupe == DedupeMode::Reuse).then_some(ready.key.as_str()),
                })
            })
            .collect();
        let steps = plan(&items, &self.rules);
        for step in steps {
            let indices = match step {
                Step::Concurrent(indices) => indices,
                Step::Alone(index) => vec![index],
            };
            let group: Vec<(usize, Prepared)> = indices
                .into_iter()
                .filter_map(|index| Some((index, prepared.get_mut(index)?.take()?)))
                .collect();
            self.run_group(&run, group, process, &mut outputs).await;
        }
        let records: Vec<ToolCallRecord> = outputs.slots.into_iter().flatten().collect();
        debug_assert_eq!(records.len(), calls.len());
        ToolBatchResult {
            records,
            duration: batch_start.elapsed(),
            requests_continuation: outputs.continuation,
        }
    }

    /// Admit the calls of one group in request order, run the admitted ones
    /// concurrently, and record what they did.
    async fn run_group(
        &self,
        run: &Run<'_>,
        group: Vec<(usize, Prepared)>,
        process: &mut ProcessToolState,
        outputs: &mut Outputs,
    ) {
        let mut admitted = Vec::with_capacity(group.len());
        for (index, ready) in group {
            let Some(call) = run.calls.get(index) else {
                continue;
            };
            let started = Instant::now();
            let admission = if outputs.deferred {
                Admission::Refused(ToolExecutionError::HeldForApproval {
                    tool_name: call.name.clone(),
                })
            } else {
                self.admit(call, &ready, process, run.ctx, run.bypass_start)
                    .await
            };
            let resolved = match admission {
                Admission::Run(reservation) => {
                    admitted.push((index, call, ready, reservation));
                    continue;
                }
                Admission::Reused(output) => {
                    // The model gets the earlier output, so its heartbeat request stands.
                    self.rules
                        .record_run(process, &call.name, call.id.clone(), Instant::now());
                    outputs.continuation |= ready.heartbeat;
                    (Ok(output), true)
                }
                Admission::Refused(error) => {
                    outputs.deferred |=
                        matches!(error, ToolExecutionError::ApprovalDeferred { .. });
                    (Err(error), false)
                }
            };
            let span = tool_span(call, Some(ready.tier));
            let record = finish(
                call,
                Some(ready.tier),
                resolved.0,
                resolved.1,
                (started, None),
                &span,
                run.events,
            );
            if let Some(slot) = outputs.slots.get_mut(index) {
                *slot = Some(record);
            }
        }
        if admitted.is_empty() {
            return;
        }
        let semaphore = Semaphore::new(parallel_permits(self.config.max_parallel));
        let mut metas = Vec::with_capacity(admitted.len());
        let mut futures = Vec::with_capacity(admitted.len());
        for (index, call, ready, reservation) in admitted {
            let Prepared {
                tool,
                tier,
                args,
                key,
                dedupe,
                heartbeat,
            } = ready;
            metas.push(Admitted {
                index,
                tier,
                key,
                dedupe,
                heartbeat,
                reservation,
            });
            let timeout = call_timeout(self.config.execution_timeout, &*tool);
            let hook_call = self.hook_view(call, &args, run.ctx);
            let semaphore = &semaphore;
            // Polled together on the batch's task (no spawn per call); each call's
            // record is built, and its event emitted, as soon as it finishes.
            futures.push(async move {
                // The semaphore is never closed; without a permit the call still runs.
                let _permit = semaphore.acquire().await.ok();
                let span = tool_span(call, Some(tier));
                let started = Instant::now();
                let (outcome, finished_at) = self
                    .run_journaled(run.ctx, call, tier, tool, args, timeout, &span)
                    .await;
                let outcome = self
                    .after_tool_hooks(hook_call, outcome, run.ctx, run.events)
                    .instrument(span.clone())
                    .await;
                finish(
                    call,
                    Some(tier),
                    outcome,
                    false,
                    (started, finished_at),
                    &span,
                    run.events,
                )
            });
        }
        let records = join_all(futures).await;
        for (admitted, record) in metas.into_iter().zip(records) {
            let index = admitted.index;
            self.settle(run.ctx, process, &record, admitted, outputs);
            if let Some(slot) = outputs.slots.get_mut(index) {
                *slot = Some(record);
            }
        }
    }

    /// Runs one admitted call: a call that is not read-only has its intent stored in
    /// the context's journal first (and does not run when that fails), gets the key in
    /// its context, and has its outcome stored as soon as it ends.
    #[allow(clippy::too_many_arguments)]
    async fn run_journaled(
        &self,
        ctx: &ExecutionContext,
        call: &ToolCall,
        tier: SafetyTier,
        tool: std::sync::Arc<dyn oxydra_tools::Tool>,
        args: serde_json::Value,
        timeout: std::time::Duration,
        span: &tracing::Span,
    ) -> (Result<ToolOutput, ToolExecutionError>, Option<Instant>) {
        let journal = ctx.intents.as_ref();
        let key = match record_intent(
            journal,
            &ctx.session_id,
            call,
            tier,
            &tool,
            &args,
            &ctx.workspace_root,
        )
        .instrument(span.clone())
        .await
        {
            Ok(key) => key,
            Err(refused) => return (Err(refused), None),
        };
        let invocation = Invocation {
            tool,
            tool_name: call.name.clone(),
            args,
            call_id: call.id.clone(),
            workspace_root: ctx.workspace_root.clone(),
            secrets: std::sync::Arc::clone(&self.secrets),
            idempotency_key: key.clone(),
        };
        let (outcome, finished_at) = invoke(invocation, &ctx.cancel, timeout, span.clone()).await;
        if let (Some(journal), Some(key)) = (journal, key) {
            journal
                .after_call(&ctx.session_id, &key, &outcome)
                .instrument(span.clone())
                .await;
        }
        (outcome, finished_at)
    }

    /// Update rule, dedupe and loop state once an admitted call has run: a failed
    /// call gives its reservation back; a successful one is recorded.
    fn settle(
        &self,
        ctx: &ExecutionContext,
        process: &mut ProcessToolState,
        record: &ToolCallRecord,
        admitted: Admitted,
        outputs: &mut Outputs,
    ) {
        let call = &record.call;
        let Ok(output) = &record.outcome else {
            self.release(ctx, &call.name, admitted.reservation);
            return;
        };
        let Admitted {
            tier,
            key,
            dedupe,
            heartbeat,
            reservation,
            ..
        } = admitted;
        self.confirm(&call.name, reservation, record.finished_at);
        let now = Instant::now();
        self.rules
            .record_run(process, &call.name, call.id.clone(), now);
        outputs.continuation |= heartbeat;
        match dedupe {
            DedupeMode::Reuse => self
                .dedupe
                .store_read(&ctx.session_id, key, output.clone(), now),
            DedupeMode::Refuse => self.dedupe.record_effect(&ctx.session_id, key, now),
            DedupeMode::Off => {}
        }
        if tier != SafetyTier::ReadOnly {
            // Reads that finished while this ran are not trustworthy either.
            self.dedupe.clear_reads(&ctx.session_id);
        }
        let rules = self.rules.for_tool(&call.name);
        if rules.exit_loop && process.phase == ExecutionPhase::Running {
            process.phase = ExecutionPhase::ExitRequested;
        }
        outputs.continuation |= rules.continue_loop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_permits_are_clamped_to_what_a_semaphore_holds() {
        assert_eq!(parallel_permits(0), 1);
        assert_eq!(parallel_permits(1), 1);
        assert_eq!(parallel_permits(16), 16);
        assert_eq!(parallel_permits(usize::MAX), Semaphore::MAX_PERMITS);
        // The clamped value is accepted.
        let semaphore = Semaphore::new(parallel_permits(usize::MAX));
        assert_eq!(semaphore.available_permits(), Semaphore::MAX_PERMITS);
    }
}
