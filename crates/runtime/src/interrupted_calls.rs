//! Calls a crash interrupted, settled when a session is opened: a stored tool call
//! without a stored result whose intent was stored (a side-effecting or privileged
//! call that had started) is never run again blindly. Its outcome, when stored, says
//! it ran; otherwise its tool says whether running it again is safe
//! ([`Tool::rerun_after_crash`](oxydra_tools::Tool::rerun_after_crash)). Either way
//! the call is not run again here: its result says what is known, is stored (so every
//! later load reads the same) and is reported as the call's event, and the model — and
//! through it the person — decides. A call repeated later goes through the rules and
//! consent like any call, and carries the interrupted call's idempotency key.
//!
//! A call without an intent never started (its intent would have been stored first)
//! or is read-only: it keeps the synthetic `interrupted` result restoring gives it.

use std::path::Path;
use std::sync::Arc;

use oxydra_executor::ToolExecutor;
use oxydra_memory::{INTERRUPTED_RESULT, IntentOutcome, IntentStatus, Memory, StoredIntent};
use oxydra_tools::checkpoint::content_hash;
use oxydra_tools::{CrashedCall, RerunSafety};
use oxydra_types::{Message, MessageRole, RuntimeEvent, SessionId, TOOL_FAILURE_PREFIX, ToolCall};

use crate::approvals::now_millis;
use crate::error::RuntimeError;
use crate::events::{EventSink, RunEvents};
use crate::intent_journal::{args_digest, idempotency_key};
use crate::session_state::SessionState;

/// What is known of a call a crash interrupted after its intent was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    /// Its outcome was stored: it ran, and ended so.
    Ran(IntentStatus),
    /// No outcome; the tool's judgement.
    Judged(RerunSafety),
}

/// What the model (or a run's error) is told of an interrupted call of `tool`.
pub fn interrupted_text(tool: &str, known: Interrupted) -> String {
    match known {
        Interrupted::Judged(RerunSafety::Unknown) => format!(
            "{TOOL_FAILURE_PREFIX}: outcome unknown — the session stopped while `{tool}` was \
             running: its intent was recorded but its outcome never was, so it may or may not \
             have taken effect. It was not run again. Check its effect before repeating it; \
             when that cannot be checked, ask the person whether to run it again."
        ),
        Interrupted::Judged(RerunSafety::Safe) => format!(
            "{TOOL_FAILURE_PREFIX}: interrupted — the session stopped while `{tool}` was \
             running, before it took effect (checked after the restart: what it changes is as \
             it was before the call). It was not run again; run it again if it is still needed."
        ),
        Interrupted::Judged(RerunSafety::AlreadyDone) => format!(
            "Interrupted after it took effect — the session stopped while `{tool}` was running, \
             and what it changes already holds its result (checked after the restart). It was \
             not run again; its output was lost."
        ),
        Interrupted::Ran(IntentStatus::Completed) => format!(
            "Interrupted after it completed — `{tool}` ran to completion before the session \
             stopped, but its output was lost. It was not run again."
        ),
        Interrupted::Ran(IntentStatus::Failed) => format!(
            "{TOOL_FAILURE_PREFIX}: `{tool}` ran and failed before the session stopped, and its \
             error was lost. It was not run again."
        ),
    }
}

/// A call left without a result, with the sequence of the assistant message that
/// made it.
struct Orphan {
    anchor: u64,
    call: ToolCall,
}

/// The calls of `state` that restoring gave a synthetic `interrupted` result: the
/// synthetic result carries its assistant message's sequence.
fn orphans(state: &SessionState) -> Vec<Orphan> {
    let mut found = Vec::new();
    let mut last: Option<(u64, &[ToolCall])> = None;
    for (sequence, message) in state.window.sequenced() {
        match message.role {
            MessageRole::Assistant if !message.tool_calls.is_empty() => {
                last = Some((sequence, &message.tool_calls));
            }
            MessageRole::Tool if message.text() == INTERRUPTED_RESULT => {
                let Some((anchor, calls)) = last.filter(|(anchor, _)| *anchor == sequence) else {
                    continue;
                };
                let call = calls
                    .iter()
                    .find(|call| message.tool_call_id.as_ref() == Some(&call.id));
                if let Some(call) = call {
                    found.push(Orphan {
                        anchor,
                        call: call.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    found
}

/// The intent of `orphan` among `intents`: by its key, or — for a call that repeated
/// an interrupted one and took its key — by its id, tool and arguments.
fn intent_of<'a>(
    intents: &'a [StoredIntent],
    key: &str,
    orphan: &Orphan,
    digest: Option<&str>,
) -> Option<&'a StoredIntent> {
    intents
        .iter()
        .find(|stored| stored.intent.key == key)
        .or_else(|| {
            intents.iter().rev().find(|stored| {
                stored.intent.call_id == orphan.call.id
                    && stored.intent.tool == orphan.call.name
                    && Some(stored.intent.args_digest.as_str()) == digest
            })
        })
}

/// What the tool says of running `orphan` again, given its `intent`: `Unknown` when
/// the tool is gone, the arguments do not pass or differ from the ones that ran (a
/// hook rewrote them).
async fn judge(
    executor: &ToolExecutor,
    workspace_root: &Path,
    orphan: &Orphan,
    stored: &StoredIntent,
) -> RerunSafety {
    let Some(tool) = executor.registry().get(&orphan.call.name) else {
        return RerunSafety::Unknown;
    };
    let Ok(checked) = executor.validate_call(&orphan.call) else {
        return RerunSafety::Unknown;
    };
    if args_digest(&checked.args) != stored.intent.args_digest {
        return RerunSafety::Unknown;
    }
    let (args, root, before) = (
        checked.args,
        workspace_root.to_owned(),
        stored.intent.before.clone(),
    );
    tokio::task::spawn_blocking(move || {
        tool.rerun_after_crash(&CrashedCall {
            args: &args,
            workspace_root: &root,
            before: before.as_deref(),
        })
    })
    .await
    .unwrap_or(RerunSafety::Unknown)
}

/// What is known of `call` (made by what `anchor` numbers in `session`) when a crash
/// may have interrupted it: `None` when no intent of it was stored (it never started,
/// or is read-only); else its stored outcome or, without one, its tool's judgement
/// ([`Tool::rerun_after_crash`](oxydra_tools::Tool::rerun_after_crash)). For a caller
/// that runs tools itself with a [`MemoryIntentJournal::anchored`](crate::MemoryIntentJournal::anchored)
/// journal, before it runs `call` again.
///
/// # Errors
/// The memory's, when the intent cannot be read.
pub async fn interrupted_call(
    memory: &Arc<dyn Memory>,
    executor: &ToolExecutor,
    workspace_root: &Path,
    session: &SessionId,
    anchor: u64,
    call: &ToolCall,
) -> Result<Option<Interrupted>, oxydra_memory::MemoryError> {
    let key = idempotency_key(session, anchor, &call.id);
    let Some(stored) = memory.intent(session, &key).await? else {
        return Ok(None);
    };
    let orphan = Orphan {
        anchor,
        call: call.clone(),
    };
    Ok(Some(match &stored.outcome {
        Some(outcome) => Interrupted::Ran(outcome.status),
        None => Interrupted::Judged(judge(executor, workspace_root, &orphan, &stored).await),
    }))
}

/// The results to store for the interrupted calls of `state` that had an intent, in
/// the order of their calls, each reported as its call's event; empty when there are
/// none (no query is made when the session has no interrupted call).
pub(crate) async fn settle(
    memory: &Arc<dyn Memory>,
    session: &SessionId,
    state: &SessionState,
    executor: &ToolExecutor,
    workspace_root: &Path,
    events: &RunEvents,
) -> Result<Vec<Message>, RuntimeError> {
    let orphans = orphans(state);
    if orphans.is_empty() {
        return Ok(Vec::new());
    }
    let intents = memory.intents(session).await?;
    let mut results = Vec::new();
    for orphan in &orphans {
        let key = idempotency_key(session, orphan.anchor, &orphan.call.id);
        let digest = executor
            .validate_call(&orphan.call)
            .ok()
            .map(|checked| args_digest(&checked.args));
        let Some(stored) = intent_of(&intents, &key, orphan, digest.as_deref()) else {
            continue;
        };
        let known = match &stored.outcome {
            Some(outcome) => Interrupted::Ran(outcome.status),
            None => Interrupted::Judged(judge(executor, workspace_root, orphan, stored).await),
        };
        let text = interrupted_text(&orphan.call.name, known);
        tracing::warn!(call_id = %orphan.call.id, tool = %orphan.call.name, ?known, "a call interrupted by a crash is settled without running it again");
        if known == Interrupted::Judged(RerunSafety::AlreadyDone) {
            // Done: no longer an interrupted intent a retry would take the key of.
            let outcome = IntentOutcome {
                status: IntentStatus::Completed,
                result_digest: content_hash(text.as_bytes()),
                finished_at_ms: now_millis(),
            };
            memory
                .store_intent_outcome(session, &stored.intent.key, &outcome)
                .await?;
        }
        let event = if text.starts_with(TOOL_FAILURE_PREFIX) {
            RuntimeEvent::ToolFailed {
                call_id: orphan.call.id.clone(),
                name: orphan.call.name.clone(),
                error: text.clone(),
            }
        } else {
            RuntimeEvent::ToolCompleted {
                call_id: orphan.call.id.clone(),
                name: orphan.call.name.clone(),
                duration_ms: 0,
                output: text.clone(),
            }
        };
        events.emit(event);
        results.push(Message::tool_result(
            orphan.call.id.clone(),
            orphan.call.name.clone(),
            text,
        ));
    }
    Ok(results)
}

#[cfg(test)]
mod tests;
