//! The runtime's [`IntentJournal`]: the intent of each side-effecting or privileged
//! call stored in memory before it runs, its outcome after (docs/runtime.md, "Side
//! effects across a crash").
//!
//! A call's idempotency key is derived from the session, the sequence number of the
//! stored assistant message that made the call, and the call's id: stable for the
//! call (a run resumed after a crash finds the same key for the same stored call),
//! and distinct for calls of different turns that reuse an id (`call_0`). A call that
//! repeats an interrupted one — same tool, same arguments, the earlier intent still
//! without an outcome — carries the earlier call's key, so that the other side can
//! recognise the retry.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use oxydra_executor::{CallIntent, IntentJournal, ToolExecutionError};
use oxydra_memory::{IntentOutcome, IntentStatus, Memory, ToolIntent};
use oxydra_tools::ToolOutput;
use oxydra_tools::checkpoint::content_hash;
use oxydra_types::{CallId, MessageRole, SessionId};

use crate::approvals::now_millis;
use crate::crash_point::{self, CrashPoint};
use crate::session_state::SessionState;

/// The idempotency key of call `call_id` made by the assistant message stored as
/// `anchor` in `session` (or, outside a conversation, by whatever `anchor` numbers):
/// `oxk-` and 32 hex digits of a SHA-256.
pub fn idempotency_key(session: &SessionId, anchor: u64, call_id: &CallId) -> String {
    let digest = content_hash(format!("oxydra-intent\0{session}\0{anchor}\0{call_id}").as_bytes());
    format!("oxk-{}", digest.get(..32).unwrap_or(&digest))
}

/// SHA-256 of `args` as JSON (object keys sorted, as `serde_json` keeps them).
pub(crate) fn args_digest(args: &serde_json::Value) -> String {
    content_hash(args.to_string().as_bytes())
}

/// An [`IntentJournal`] on a [`Memory`]: each call's intent stored before it runs and
/// its outcome after, under its idempotency key (`oxk-…`, see [`idempotency_key`]).
/// The runtime gives one to every batch of a run with memory; a program that runs
/// tools through a [`ToolExecutor`](oxydra_executor::ToolExecutor) itself (the
/// coordinator's deterministic steps) builds one with [`MemoryIntentJournal::anchored`].
pub struct MemoryIntentJournal {
    memory: Arc<dyn Memory>,
    /// The sequence of the stored assistant message that made each call.
    anchors: HashMap<CallId, u64>,
    /// The anchor of a call no stored message made (a start or exit tool's, stored
    /// with its results): the sequence its message will take.
    fallback: u64,
}

impl std::fmt::Debug for MemoryIntentJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIntentJournal")
            .field("anchors", &self.anchors)
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl MemoryIntentJournal {
    /// A journal keying every call by `anchor` and its id: for calls no stored message
    /// made, whose ids are stable (a deterministic run's `step_1`, `step_2`, …), so that
    /// an execution taking the run over finds the same keys.
    pub fn anchored(memory: Arc<dyn Memory>, anchor: u64) -> Self {
        Self {
            memory,
            anchors: HashMap::new(),
            fallback: anchor,
        }
    }

    /// The journal of a batch run on `state`: each call anchored at the latest
    /// assistant message of the session that made a call with its id.
    pub(crate) fn for_batch(memory: Arc<dyn Memory>, state: &SessionState) -> Self {
        let mut anchors = HashMap::new();
        for (sequence, message) in state.window.sequenced() {
            if message.role == MessageRole::Assistant {
                for call in &message.tool_calls {
                    anchors.insert(call.id.clone(), sequence);
                }
            }
        }
        Self {
            memory,
            anchors,
            fallback: state.next_sequence,
        }
    }

    /// The key of a call that repeats an interrupted intent of `session` (same tool,
    /// same arguments, no outcome), if there is one.
    async fn interrupted_key(
        &self,
        session: &SessionId,
        tool: &str,
        digest: &str,
    ) -> Option<String> {
        match self.memory.unfinished_intents(session).await {
            Ok(intents) => intents
                .into_iter()
                .rev()
                .find(|intent| intent.tool == tool && intent.args_digest == digest)
                .map(|intent| intent.key),
            Err(error) => {
                tracing::warn!(%error, "the session's intents could not be read");
                None
            }
        }
    }
}

#[async_trait]
impl IntentJournal for MemoryIntentJournal {
    async fn before_call(
        &self,
        session: &SessionId,
        intent: CallIntent<'_>,
    ) -> Result<String, String> {
        let call = intent.call;
        let digest = args_digest(intent.args);
        let anchor = self.anchors.get(&call.id).copied().unwrap_or(self.fallback);
        let key = match self.interrupted_key(session, &call.name, &digest).await {
            Some(earlier) => {
                tracing::info!(call_id = %call.id, tool = %call.name, key = %earlier, "the call repeats an interrupted one: it carries its idempotency key");
                earlier
            }
            None => idempotency_key(session, anchor, &call.id),
        };
        let stored = ToolIntent {
            session_id: session.clone(),
            key: key.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args_digest: digest,
            before: intent.before,
            created_at_ms: now_millis(),
        };
        self.memory
            .store_intent(&stored)
            .await
            .map_err(|error| error.to_string())?;
        crash_point::reached(CrashPoint::IntentStored);
        Ok(key)
    }

    async fn after_call(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &Result<ToolOutput, ToolExecutionError>,
    ) {
        crash_point::reached(CrashPoint::ToolReturned);
        let (status, text) = match outcome {
            Ok(output) => (IntentStatus::Completed, output.content.clone()),
            Err(error) => (IntentStatus::Failed, error.to_string()),
        };
        let stored = IntentOutcome {
            status,
            result_digest: content_hash(text.as_bytes()),
            finished_at_ms: now_millis(),
        };
        match self
            .memory
            .store_intent_outcome(session, key, &stored)
            .await
        {
            Ok(true) => {}
            Ok(false) => tracing::warn!(key, "the call's intent was gone when its outcome came"),
            Err(error) => {
                tracing::warn!(%error, key, "the call's outcome could not be stored: a resume will read it as unknown");
            }
        }
        crash_point::reached(CrashPoint::OutcomeStored);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_per_call_and_differ_across_turns_and_sessions() {
        let session = SessionId::from("ses_a");
        let call = CallId::from("call_0");
        let key = idempotency_key(&session, 4, &call);
        assert_eq!(key, idempotency_key(&session, 4, &call));
        assert!(key.starts_with("oxk-") && key.len() == 36, "{key}");
        assert_ne!(
            key,
            idempotency_key(&session, 6, &call),
            "a later turn reusing the id"
        );
        assert_ne!(key, idempotency_key(&SessionId::from("ses_b"), 4, &call));
        assert_ne!(key, idempotency_key(&session, 4, &CallId::from("call_1")));
    }

    fn journal(memory: &Arc<dyn Memory>) -> MemoryIntentJournal {
        MemoryIntentJournal {
            memory: Arc::clone(memory),
            anchors: HashMap::from([(CallId::from("c2"), 5)]),
            fallback: 9,
        }
    }

    async fn intend(
        journal: &MemoryIntentJournal,
        session: &SessionId,
        id: &str,
        args: &str,
    ) -> String {
        let call = oxydra_types::ToolCall::new(CallId::from(id), "send", args);
        let args: serde_json::Value = serde_json::from_str(args).unwrap();
        let intent = CallIntent {
            call: &call,
            tier: oxydra_types::SafetyTier::SideEffecting,
            args: &args,
            before: None,
        };
        journal.before_call(session, intent).await.unwrap()
    }

    #[tokio::test]
    async fn a_call_repeating_an_interrupted_one_carries_its_key() {
        let memory: Arc<dyn Memory> =
            Arc::new(oxydra_memory::SqliteMemory::open_in_memory().unwrap());
        let session = SessionId::from("ses_retry");
        let journal = journal(&memory);
        // `c1` is anchored at the fallback; it never gets an outcome (the crash).
        let interrupted = intend(&journal, &session, "c1", r#"{"to":"ops"}"#).await;
        assert_eq!(
            interrupted,
            idempotency_key(&session, 9, &CallId::from("c1"))
        );
        // The model repeats it as `c2`: same tool, same arguments.
        let retry = intend(&journal, &session, "c2", r#"{"to":"ops"}"#).await;
        assert_eq!(retry, interrupted);
        let stored = memory.intent(&session, &retry).await.unwrap().unwrap();
        assert_eq!(stored.intent.call_id, CallId::from("c2"));
        // Other arguments are another request: a key of its own, from its anchor.
        let other = intend(&journal, &session, "c2", r#"{"to":"dev"}"#).await;
        assert_eq!(other, idempotency_key(&session, 5, &CallId::from("c2")));
        // Once the retry has an outcome, the same arguments again are a new request.
        journal
            .after_call(&session, &retry, &Ok(ToolOutput::text("sent")))
            .await;
        let again = intend(&journal, &session, "c3", r#"{"to":"ops"}"#).await;
        assert_ne!(again, retry);
        let done = memory.intent(&session, &retry).await.unwrap().unwrap();
        assert_eq!(done.outcome.unwrap().status, IntentStatus::Completed);
    }

    #[test]
    fn the_digest_does_not_depend_on_key_order() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":"x"}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":"x","b":1}"#).unwrap();
        assert_eq!(args_digest(&a), args_digest(&b));
    }
}
