//! Running a turn's tool calls through the executor under the turn timeout and the
//! cancellation token (the timeout runs on the batch's [`ConsentClock`], which stands
//! still while a consent question waits for a person), and turning every call into a scrubbed tool-result message cut
//! to its share of the context window ([`ResultCap`]), the output's parts (images,
//! documents) after its text, their metadata scrubbed.

use std::path::Path;
use std::time::Duration;

use oxydra_executor::{
    ConsentClock, ExecutionContext, PermissionScope, ProcessToolState, ProvenanceLedger,
    SessionRunId, ToolBatchResult, ToolCallRecord, ToolExecutionError, ToolExecutor,
};
use oxydra_scrubbing::Scrubber;
use oxydra_types::{
    ContentPart, Message, SafetyTier, SessionId, Source, TOOL_FAILURE_PREFIX, ToolCall,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::budget::Budget;
use crate::context::ResultCap;
use crate::error::RuntimeError;
use crate::events::RunEvents;
use crate::part_scrub::scrub_parts;

/// How long a cancelled batch may take to hand back its records before the runtime
/// stops waiting and writes the missing results itself.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// A finished batch: one scrubbed result message per call, in request order, and the
/// reason the session must end, if any (cancellation or the turn timeout).
#[derive(Debug)]
pub(crate) struct DispatchOutcome {
    pub results: Vec<Message>,
    pub ended: Option<RuntimeError>,
    /// Calls that wait for a person (consent deferred, or held behind such a call):
    /// the results from `waiting.from` on are placeholders, not to be stored.
    pub waiting: Option<Waiting>,
}

/// The calls of a batch that wait for a person.
#[derive(Debug)]
pub(crate) struct Waiting {
    /// The position of the first call that did not run.
    pub from: usize,
    /// The calls whose consent was deferred, in request order.
    pub deferred: Vec<DeferredCall>,
    /// The calls held behind a deferred one (they did not run: they run when the run
    /// resumes), in request order.
    pub held: Vec<ToolCall>,
}

/// A call whose consent the broker deferred.
#[derive(Debug)]
pub(crate) struct DeferredCall {
    pub call: ToolCall,
    pub tier: SafetyTier,
    pub scope: PermissionScope,
    pub ttl: Duration,
    /// Why a person must decide (the provenance hold, the consent rule or the tier).
    pub reason: String,
}

/// The waiting calls of `records` (`None` when every call was resolved).
fn waiting_calls(records: &[ToolCallRecord]) -> Option<Waiting> {
    let from = records.iter().position(|record| {
        record
            .error()
            .is_some_and(ToolExecutionError::waits_for_approval)
    })?;
    let deferred = records
        .iter()
        .skip(from)
        .filter_map(|record| match record.error() {
            Some(ToolExecutionError::ApprovalDeferred {
                scope, ttl, reason, ..
            }) => Some(DeferredCall {
                call: record.call.clone(),
                tier: record.tier.unwrap_or(SafetyTier::Privileged),
                scope: *scope,
                ttl: *ttl,
                reason: reason.clone(),
            }),
            _ => None,
        })
        .collect();
    let held = records
        .iter()
        .skip(from)
        .filter(|record| {
            matches!(
                record.error(),
                Some(ToolExecutionError::HeldForApproval { .. })
            )
        })
        .map(|record| record.call.clone())
        .collect();
    Some(Waiting {
        from,
        deferred,
        held,
    })
}

/// What the batch's calls need besides the calls themselves.
pub(crate) struct Dispatch<'a> {
    pub executor: &'a ToolExecutor,
    pub scrubber: &'a Scrubber,
    pub session_id: &'a SessionId,
    pub workspace_root: &'a Path,
    pub session_run: SessionRunId,
    pub timeout: Duration,
    pub cancel: &'a CancellationToken,
    pub events: &'a RunEvents,
    /// The share of the context window the batch's results may take.
    pub result_cap: ResultCap,
    /// Files changing calls of the session named: never attached as media
    /// ([`crate::media_guard`]).
    pub written: std::collections::BTreeSet<std::path::PathBuf>,
    /// The session's provenance ledger: the executor reads it to hold calls (and
    /// clears it when a person approves one).
    pub provenance: ProvenanceLedger,
    /// Where the intents and outcomes of the batch's side-effecting calls are stored
    /// (`None`: the runtime has no memory).
    pub intents: Option<std::sync::Arc<dyn oxydra_executor::IntentJournal>>,
}

/// Which kind of batch to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchKind {
    /// The model's calls.
    Calls,
    /// The executor's start-constraint tools.
    Start,
    /// The executor's exit-requirement tools.
    Exit,
}

impl Dispatch<'_> {
    /// `content` and `parts` as they may reach the model: each part checked by
    /// [`crate::media_guard`] (a withheld one becomes a line of the content), the
    /// rest with their metadata scrubbed.
    fn guarded(&self, mut content: String, parts: &[ContentPart]) -> (String, Vec<ContentPart>) {
        let mut kept = Vec::with_capacity(parts.len());
        for part in parts {
            match crate::media_guard::check(part, self.scrubber, &self.written) {
                Ok(()) => kept.push(part.clone()),
                Err(withheld) => {
                    tracing::warn!(reason = ?withheld, "an attachment was withheld");
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&withheld.note(part));
                }
            }
        }
        (content, scrub_parts(self.scrubber, &kept))
    }

    /// Where the result of `record` came from ([`oxydra_tools::Tool::output_source`]),
    /// when the tool ran: a call refused before it ran read nothing.
    fn output_source(&self, record: &ToolCallRecord) -> Option<Source> {
        let ran = match &record.outcome {
            Ok(_) => true,
            Err(error) => matches!(
                error,
                ToolExecutionError::Failed(_)
                    | ToolExecutionError::Timeout { .. }
                    | ToolExecutionError::Panicked { .. }
            ),
        };
        if !ran {
            return None;
        }
        let tool = self.executor.registry().get(&record.call.name)?;
        // The arguments as the tool got them (`request_heartbeat` taken out).
        let args = self.executor.validate_call(&record.call).ok()?.args;
        tool.output_source(&args)
    }

    /// Runs `calls` (or the start / exit tools) and returns the result messages.
    /// For `Start` and `Exit` the calls are taken from the returned records.
    pub async fn run(
        &self,
        kind: BatchKind,
        calls: &[ToolCall],
        process: &mut ProcessToolState,
    ) -> (Vec<ToolCall>, DispatchOutcome) {
        let tool_cancel = self.cancel.child_token();
        let clock = ConsentClock::new();
        let ctx = ExecutionContext {
            session_run: self.session_run,
            session_id: self.session_id.clone(),
            workspace_root: self.workspace_root.to_path_buf(),
            cancel: tool_cancel.clone(),
            consent_clock: clock.clone(),
            provenance: self.provenance.clone(),
            intents: self.intents.clone(),
        };
        let span = tracing::info_span!(
            "tool_batch",
            calls = calls.len(),
            names = %calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(","),
            duration_ms = tracing::field::Empty,
            failures = tracing::field::Empty,
        );
        let executor = self.executor;
        let events: &RunEvents = self.events;
        let batch = async {
            match kind {
                BatchKind::Calls => executor.execute_batch(calls, process, &ctx, events).await,
                BatchKind::Start => {
                    executor
                        .execute_start_constraints(process, &ctx, events)
                        .await
                }
                BatchKind::Exit => {
                    executor
                        .execute_exit_requirements(process, &ctx, events)
                        .await
                }
            }
        }
        .instrument(span.clone());
        tokio::pin!(batch);
        let mut ended = None;
        let finished: Option<ToolBatchResult> = tokio::select! {
            result = &mut batch => Some(result),
            _ = self.cancel.cancelled() => {
                ended = Some(RuntimeError::Cancelled);
                None
            }
            // Time a person takes to answer a consent question is not counted: the
            // question is bounded by the executor's permission timeout instead.
            () = clock.run_out(self.timeout) => {
                ended = Some(RuntimeError::budget(
                    Budget::TurnTimeout,
                    format!(
                        "tool calls did not finish within {} ms (not counting the time a \
                         consent question waited for an answer)",
                        self.timeout.as_millis()
                    ),
                ));
                None
            }
        };
        let finished = match finished {
            Some(result) => Some(result),
            None => {
                tool_cancel.cancel();
                tokio::time::timeout(CANCEL_GRACE, &mut batch).await.ok()
            }
        };
        let records = finished.map(|result| {
            span.record("duration_ms", result.duration.as_millis() as u64);
            span.record("failures", result.failures());
            result.records
        });
        let records = records.unwrap_or_default();
        // Only the model's calls wait for a person; a constraint tool's deferred
        // consent reads as its failure.
        let waiting = match kind {
            BatchKind::Calls => waiting_calls(&records),
            BatchKind::Start | BatchKind::Exit => None,
        };
        let calls: Vec<ToolCall> = match kind {
            BatchKind::Calls => calls.to_vec(),
            BatchKind::Start | BatchKind::Exit => records.iter().map(|r| r.call.clone()).collect(),
        };
        let missing_reason = match &ended {
            Some(RuntimeError::Cancelled) => format!("{TOOL_FAILURE_PREFIX}: cancelled"),
            Some(other) => format!("{TOOL_FAILURE_PREFIX}: {other}"),
            None => format!("{TOOL_FAILURE_PREFIX}: no result was returned"),
        };
        let limit = self.result_cap.per_result(calls.len());
        let mut results = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let record = records
                .get(index)
                .filter(|record| record.call.id == call.id)
                .or_else(|| records.iter().find(|record| record.call.id == call.id));
            let (content, parts) = match record {
                Some(record) => self.guarded(record.content_for_model(), record.parts_for_model()),
                None => (missing_reason.clone(), Vec::new()),
            };
            let scrubbed = self.scrubber.scrub(&content).into_owned();
            let source = record.and_then(|record| self.output_source(record));
            results.push(
                Message::tool_result(
                    call.id.clone(),
                    call.name.clone(),
                    ResultCap::apply(scrubbed, limit),
                )
                .with_parts(parts)
                .with_source(source),
            );
        }
        (
            calls,
            DispatchOutcome {
                results,
                ended,
                waiting,
            },
        )
    }
}
