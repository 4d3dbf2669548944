//! Deterministic runs: the blueprint's steps, their arguments rendered from the run's
//! parameters, executed one by one through a `ToolExecutor` with no model.
//!
//! Steps were written by whoever configured the blueprint, but their arguments come
//! from whoever started the run, so the executor asks the same consent as for AI
//! agents: a Privileged step (which the blueprint must declare in `allow_privileged`)
//! runs only when the permission broker approves it. Rules, argument validation,
//! timeouts and cancellation all apply. The first step that fails (a refused consent
//! included) ends the run `failed` with kind `step_failed`.
//!
//! The executor does not scrub tool output, so step outputs (text and structured)
//! and step errors here are raw; the store scrubs the whole result and error before
//! it records them (`RunStore::finish_run`), so no secret a step read reaches the
//! database, `GET /runs/{id}` or `get_agent_run`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use oxydra_executor::{ExecutionContext, NoopEventSink, ToolExecutionError, ToolExecutor};
use oxydra_memory::{IntentStatus, Memory};
use oxydra_runtime::{Interrupted, MemoryIntentJournal, interrupted_call, interrupted_text};
use oxydra_tools::RerunSafety;
use oxydra_types::{CallId, ToolCall};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::RunRequest;
use crate::blueprint::BlueprintBody;
use crate::run::RunError;

/// What a deterministic step's idempotency key is anchored at: its call id
/// (`step_N`) is unique in its run's session already.
const STEP_ANCHOR: u64 = 0;

/// Runs deterministic blueprints.
pub struct DeterministicRunner {
    executors: HashMap<String, Arc<ToolExecutor>>,
    workspace_root: PathBuf,
    /// Where each step's intent and outcome are stored (`None`: nowhere).
    memory: Option<Arc<dyn Memory>>,
}

impl std::fmt::Debug for DeterministicRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeterministicRunner")
            .field("blueprints", &self.executors.keys().collect::<Vec<_>>())
            .field("workspace_root", &self.workspace_root)
            .finish()
    }
}

impl DeterministicRunner {
    /// A runner with one executor per blueprint name, running tools in `workspace_root`.
    pub fn new(executors: HashMap<String, Arc<ToolExecutor>>, workspace_root: PathBuf) -> Self {
        Self {
            executors,
            workspace_root,
            memory: None,
        }
    }

    /// The same runner storing each step's intent in `memory` before the step runs and
    /// its outcome after: a run taken over after its worker died never runs a step
    /// again blindly (see [`DeterministicRunner::execute`]).
    #[must_use]
    pub fn with_memory(mut self, memory: Arc<dyn Memory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// What is known of step `call` when an execution before this one may have run it,
    /// and what this execution does about it.
    async fn interrupted(
        &self,
        executor: &ToolExecutor,
        session_id: &oxydra_types::SessionId,
        call: &ToolCall,
    ) -> Result<Option<Interrupted>, RunError> {
        let Some(memory) = &self.memory else {
            return Ok(None);
        };
        interrupted_call(
            memory,
            executor,
            &self.workspace_root,
            session_id,
            STEP_ANCHOR,
            call,
        )
        .await
        .map_err(|error| RunError::new("internal", format!("reading the step's intent: {error}")))
    }

    /// Runs the steps of `run`'s blueprint. The result is
    /// `{"steps": [{"step", "tool", "output", "structured"?}], "output": <last output>}`.
    ///
    /// With memory, each step (call `step_N`) stores its intent before it runs and its
    /// outcome after, and a step whose intent an earlier execution stored is not run
    /// again blindly: one that completed, or whose tool finds its effect in place, is
    /// not run again (its output reads what is known: the output was lost); one whose
    /// tool finds it did not take effect runs; one that failed, or whose outcome is
    /// unknown, ends the run `step_failed` with `error_kind` `outcome_unknown` (or
    /// `failed`), saying so.
    pub async fn execute(&self, run: RunRequest) -> Result<Value, RunError> {
        let BlueprintBody::Deterministic(steps) = run.blueprint.body() else {
            return Err(RunError::new(
                "internal",
                "the deterministic runner was given an AI agent blueprint",
            ));
        };
        let executor = self.executors.get(run.blueprint.name()).ok_or_else(|| {
            RunError::new(
                "internal",
                format!(
                    "no executor was built for blueprint `{}`",
                    run.blueprint.name()
                ),
            )
        })?;
        let empty = Map::new();
        let parameters = run.parameters.as_object().unwrap_or(&empty);
        let session_id = crate::run::session_for(&run.run_id);
        let mut process = executor.new_process_state();
        let mut outputs = Vec::with_capacity(steps.len());
        let mut last_output = String::new();
        for (index, step) in steps.iter().enumerate() {
            if run.cancel.is_cancelled() {
                return Err(RunError::cancelled());
            }
            let number = index + 1;
            let arguments = step.args.render(parameters).map_err(|error| {
                RunError::new(
                    "step_failed",
                    format!("step {number} (`{}`) was not run: {error}", step.tool),
                )
                .with_detail(json!({
                    "step": number,
                    "tool": step.tool,
                    "error_kind": "unsafe_parameter",
                    "completed_steps": outputs,
                }))
            })?;
            // A stable id: an execution taking the run over finds the step's intent.
            let call = ToolCall::new(
                CallId::from(format!("step_{number}")),
                step.tool.clone(),
                arguments.to_string(),
            );
            match self.interrupted(executor, &session_id, &call).await? {
                None | Some(Interrupted::Judged(RerunSafety::Safe)) => {}
                Some(
                    known @ (Interrupted::Ran(IntentStatus::Completed)
                    | Interrupted::Judged(RerunSafety::AlreadyDone)),
                ) => {
                    let text = interrupted_text(&step.tool, known);
                    tracing::warn!(step = number, tool = %step.tool, "a step an earlier execution ran is not run again");
                    outputs.push(json!({"step": number, "tool": step.tool, "output": text}));
                    last_output = text;
                    continue;
                }
                Some(known) => {
                    let text = interrupted_text(&step.tool, known);
                    let kind = match known {
                        Interrupted::Ran(_) => "failed",
                        Interrupted::Judged(_) => "outcome_unknown",
                    };
                    return Err(RunError::new(
                        "step_failed",
                        format!("step {number} (`{}`) was interrupted: {text}", step.tool),
                    )
                    .with_detail(json!({
                        "step": number,
                        "tool": step.tool,
                        "error_kind": kind,
                        "arguments": arguments,
                        "completed_steps": outputs,
                    })));
                }
            }
            let mut ctx = ExecutionContext::new(session_id.clone(), self.workspace_root.clone())
                .with_cancel(run.cancel.clone());
            if let Some(memory) = &self.memory {
                ctx = ctx.with_intent_journal(Arc::new(MemoryIntentJournal::anchored(
                    Arc::clone(memory),
                    STEP_ANCHOR,
                )));
            }
            let span = tracing::info_span!("deterministic_step", step = number, tool = %step.tool);
            let mut batch = executor
                .execute_batch(
                    std::slice::from_ref(&call),
                    &mut process,
                    &ctx,
                    &NoopEventSink,
                )
                .instrument(span)
                .await;
            executor.complete_session_run(ctx.session_run);
            let record = batch.records.pop().ok_or_else(|| {
                RunError::new("internal", format!("step {number} produced no result"))
            })?;
            match record.outcome {
                Ok(output) => {
                    let mut entry = json!({
                        "step": number,
                        "tool": step.tool,
                        "output": output.content,
                    });
                    if let (Some(structured), Some(map)) =
                        (output.structured, entry.as_object_mut())
                    {
                        map.insert("structured".into(), structured);
                    }
                    last_output = output.content;
                    outputs.push(entry);
                }
                Err(ToolExecutionError::Cancelled) => return Err(RunError::cancelled()),
                Err(error) => {
                    let message = match &error {
                        // The broker would have a person decide, but a step has no turn
                        // to end and come back to: say what makes it run.
                        ToolExecutionError::ApprovalDeferred { .. } => format!(
                            "step {number} (`{}`) needs a person's consent, and a deterministic \
                             step cannot wait for one: have the permission broker decide \
                             (`oxydra serve --approve allow`, or `approve = \"allow\"` under \
                             [runtime]; `deny` refuses it)",
                            step.tool
                        ),
                        _ => format!("step {number} (`{}`) failed: {error}", step.tool),
                    };
                    return Err(RunError::new("step_failed", message).with_detail(json!({
                        "step": number,
                        "tool": step.tool,
                        "error_kind": error.kind(),
                        "arguments": arguments,
                        "completed_steps": outputs,
                    })));
                }
            }
        }
        Ok(json!({"steps": outputs, "output": last_output}))
    }
}
