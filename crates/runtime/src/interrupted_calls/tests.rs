use std::sync::Arc;

use async_trait::async_trait;
use oxydra_executor::{CollectingEventSink, ToolExecutor, ToolExecutorConfig};
use oxydra_memory::{SessionSummary, SqliteMemory, ToolIntent, repair_stored};
use oxydra_scrubbing::Scrubber;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, SafetyTier, ToolCall, ToolSchema};

use super::*;

/// A side-effecting tool that writes `content` to `a.txt`, judging an interrupted
/// call as the built-in file tools do: done when the file holds `content`, safe when
/// it is as it was `before`, unknown otherwise.
struct WriteA;

#[async_trait]
impl Tool for WriteA {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "file_write",
            "writes a.txt",
            serde_json::json!({"type": "object"}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }
    fn rerun_after_crash(&self, call: &CrashedCall<'_>) -> RerunSafety {
        let now = std::fs::read(call.workspace_root.join("a.txt")).unwrap_or_default();
        let intended = call.args["content"].as_str().unwrap_or_default().as_bytes();
        if now == intended {
            RerunSafety::AlreadyDone
        } else if call.before == Some(content_hash(&now).as_str()) {
            RerunSafety::Safe
        } else {
            RerunSafety::Unknown
        }
    }
    async fn execute(
        &self,
        _args: serde_json::Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        panic!("an interrupted call is never run again by settling it")
    }
}

const WRITE: &str = r#"{"path":"a.txt","content":"new"}"#;

/// A session whose model asked for `file_write` of `a.txt` (call `c1`, stored as
/// message 2) and stopped; the workspace holds `a.txt` = `old`.
struct Crashed {
    memory: Arc<dyn Memory>,
    session: SessionId,
    executor: ToolExecutor,
    workspace: tempfile::TempDir,
    sink: Arc<CollectingEventSink>,
}

impl Crashed {
    async fn new() -> Self {
        let memory: Arc<dyn Memory> = Arc::new(SqliteMemory::open_in_memory().unwrap());
        let session = SessionId::from("ses_crashed");
        memory
            .append(&session, &Message::user("write"))
            .await
            .unwrap();
        let call = ToolCall::new(CallId::from("c1"), "file_write", WRITE);
        memory
            .append(
                &session,
                &Message::assistant_with_tool_calls(None, vec![call]),
            )
            .await
            .unwrap();
        let mut registry = ToolRegistry::new();
        registry.register(WriteA).unwrap();
        let executor = ToolExecutor::new(
            Arc::new(registry),
            Vec::new(),
            ToolExecutorConfig::default(),
        );
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("a.txt"), "old").unwrap();
        Self {
            memory,
            session,
            executor,
            workspace,
            sink: Arc::new(CollectingEventSink::new()),
        }
    }

    /// Stores the intent of `c1` as the journal would have, with `before`.
    async fn store_intent(&self, before: Option<String>) -> String {
        let key = idempotency_key(&self.session, 2, &CallId::from("c1"));
        let args: serde_json::Value = serde_json::from_str(WRITE).unwrap();
        self.memory
            .store_intent(&ToolIntent {
                session_id: self.session.clone(),
                key: key.clone(),
                call_id: CallId::from("c1"),
                tool: "file_write".to_owned(),
                args_digest: args_digest(&args),
                before,
                created_at_ms: 1,
            })
            .await
            .unwrap();
        key
    }

    async fn settle(&self) -> Vec<Message> {
        let stored = self.memory.messages(&self.session).await.unwrap();
        let state =
            SessionState::from_restored(repair_stored(stored), 3, SessionSummary::default());
        let events = RunEvents::new(Scrubber::new(), self.sink.clone(), None, None, 8);
        settle(
            &self.memory,
            &self.session,
            &state,
            &self.executor,
            self.workspace.path(),
            &events,
        )
        .await
        .unwrap()
    }

    fn write(&self, text: &str) {
        std::fs::write(self.workspace.path().join("a.txt"), text).unwrap();
    }
}

fn only_text(results: &[Message]) -> &str {
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        results[0].tool_call_id.as_ref().map(CallId::as_str),
        Some("c1")
    );
    results[0].text()
}

#[tokio::test]
async fn a_call_without_an_intent_keeps_its_interrupted_result() {
    let crashed = Crashed::new().await;
    assert!(crashed.settle().await.is_empty());
    assert!(crashed.sink.events().is_empty());
}

#[tokio::test]
async fn an_untouched_file_is_safe_and_the_model_is_told_it_did_not_take_effect() {
    let crashed = Crashed::new().await;
    crashed.store_intent(Some(content_hash(b"old"))).await;
    let results = crashed.settle().await;
    let text = only_text(&results);
    assert_eq!(
        text,
        interrupted_text("file_write", Interrupted::Judged(RerunSafety::Safe))
    );
    assert_eq!(
        std::fs::read_to_string(crashed.workspace.path().join("a.txt")).unwrap(),
        "old",
        "not run again"
    );
    assert!(matches!(
        crashed.sink.events().as_slice(),
        [RuntimeEvent::ToolFailed { .. }]
    ));
}

#[tokio::test]
async fn a_file_holding_the_content_is_done_and_its_intent_gets_an_outcome() {
    let crashed = Crashed::new().await;
    let key = crashed.store_intent(Some(content_hash(b"old"))).await;
    crashed.write("new");
    let results = crashed.settle().await;
    assert_eq!(
        only_text(&results),
        interrupted_text("file_write", Interrupted::Judged(RerunSafety::AlreadyDone))
    );
    let stored = crashed
        .memory
        .intent(&crashed.session, &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.outcome.unwrap().status, IntentStatus::Completed);
    assert!(matches!(
        crashed.sink.events().as_slice(),
        [RuntimeEvent::ToolCompleted { .. }]
    ));
}

#[tokio::test]
async fn a_file_changed_by_someone_else_is_unknown() {
    let crashed = Crashed::new().await;
    crashed.store_intent(Some(content_hash(b"old"))).await;
    crashed.write("someone else's");
    let results = crashed.settle().await;
    let text = only_text(&results);
    assert!(text.contains("outcome unknown"), "{text}");
    assert!(text.starts_with(TOOL_FAILURE_PREFIX), "{text}");
}

#[tokio::test]
async fn arguments_that_differ_from_the_intents_are_unknown() {
    let crashed = Crashed::new().await;
    let key = idempotency_key(&crashed.session, 2, &CallId::from("c1"));
    crashed
        .memory
        .store_intent(&ToolIntent {
            session_id: crashed.session.clone(),
            key,
            call_id: CallId::from("c1"),
            tool: "file_write".to_owned(),
            // A hook rewrote the arguments the tool got.
            args_digest: "not-these-arguments".to_owned(),
            before: Some(content_hash(b"old")),
            created_at_ms: 1,
        })
        .await
        .unwrap();
    let results = crashed.settle().await;
    assert!(only_text(&results).contains("outcome unknown"));
}

#[tokio::test]
async fn a_stored_outcome_says_the_call_ran() {
    let crashed = Crashed::new().await;
    let key = crashed.store_intent(None).await;
    crashed
        .memory
        .store_intent_outcome(
            &crashed.session,
            &key,
            &IntentOutcome {
                status: IntentStatus::Completed,
                result_digest: "d".to_owned(),
                finished_at_ms: 2,
            },
        )
        .await
        .unwrap();
    let results = crashed.settle().await;
    assert_eq!(
        only_text(&results),
        interrupted_text("file_write", Interrupted::Ran(IntentStatus::Completed))
    );
}

#[tokio::test]
async fn a_call_with_a_stored_result_is_left_alone() {
    let crashed = Crashed::new().await;
    crashed.store_intent(None).await;
    crashed
        .memory
        .append(
            &crashed.session,
            &Message::tool_result(CallId::from("c1"), "file_write", "Overwrote `a.txt`"),
        )
        .await
        .unwrap();
    assert!(crashed.settle().await.is_empty());
}
