//! Deterministic steps across a crash: each step's intent is stored before it runs and
//! its outcome after; an execution taking the run over does not run a step again
//! blindly — a completed step is not repeated, an interrupted one whose outcome is
//! unknown ends the run saying so, one whose tool finds it did not take effect runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use oxydra_executor::{ToolExecutor, ToolExecutorConfig};
use oxydra_memory::{IntentOutcome, IntentStatus, Memory, SqliteMemory, ToolIntent};
use oxydra_runtime::idempotency_key;
use oxydra_tools::{
    CrashedCall, RerunSafety, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use oxydra_types::{CallId, RunId, SafetyTier, ToolSchema};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::RunRequest;
use super::deterministic::DeterministicRunner;
use crate::blueprint::Blueprint;
use crate::config::{BlueprintConfig, StepConfig};
use crate::run::{Run, RunLineage};
use crate::run_ledger::RunLedger;
use crate::run_usage::RunUsage;
use crate::sqlite::SqliteRunStore;
use crate::store::RunStore;

/// A side-effecting tool that counts its runs; after a crash it judges as `judged`.
struct Count {
    runs: Arc<AtomicUsize>,
    judged: RerunSafety,
}

#[async_trait]
impl Tool for Count {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("count", "counts", json!({"type": "object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }
    fn rerun_after_crash(&self, _call: &CrashedCall<'_>) -> RerunSafety {
        self.judged
    }
    async fn execute(
        &self,
        _args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(ToolOutput::text(format!(
            "run {n} key {}",
            ctx.idempotency_key().unwrap_or("none")
        )))
    }
}

struct Setup {
    memory: Arc<dyn Memory>,
    runner: DeterministicRunner,
    runs: Arc<AtomicUsize>,
    store: Arc<dyn RunStore>,
    blueprint: Arc<Blueprint>,
}

async fn setup(judged: RerunSafety) -> Setup {
    let memory: Arc<dyn Memory> = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry
        .register(Count {
            runs: Arc::clone(&runs),
            judged,
        })
        .unwrap();
    let executor = Arc::new(ToolExecutor::new(
        Arc::new(registry),
        Vec::new(),
        ToolExecutorConfig::default(),
    ));
    let runner = DeterministicRunner::new(
        HashMap::from([("pipeline".to_owned(), executor)]),
        std::env::temp_dir(),
    )
    .with_memory(Arc::clone(&memory));
    let blueprint = Arc::new(
        Blueprint::from_config(BlueprintConfig::deterministic(
            "pipeline",
            "Counts twice",
            json!({"type": "object"}),
            vec![
                StepConfig::new("count", json!({"n": 1})),
                StepConfig::new("count", json!({"n": 2})),
            ],
        ))
        .unwrap(),
    );
    let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(None).unwrap());
    store
        .insert_run(Run::pending(
            "r1",
            "pipeline",
            json!({}),
            RunLineage::root("r1"),
        ))
        .await
        .unwrap();
    Setup {
        memory,
        runner,
        runs,
        store,
        blueprint,
    }
}

impl Setup {
    fn request(&self, resumed: bool) -> RunRequest {
        RunRequest {
            run_id: RunId::from("r1"),
            blueprint: Arc::clone(&self.blueprint),
            parameters: json!({}),
            resumed,
            decisions: Vec::new(),
            used: RunUsage::default(),
            ledger: RunLedger::new(Arc::clone(&self.store), "r1"),
            cancel: CancellationToken::new(),
        }
    }

    /// Stores step 1's intent as a dead execution left it (with `outcome`, if any).
    async fn interrupted_step_one(&self, outcome: Option<IntentStatus>) {
        let session = crate::run::session_for(&RunId::from("r1"));
        let call = CallId::from("step_1");
        let key = idempotency_key(&session, 0, &call);
        self.memory
            .store_intent(&ToolIntent {
                session_id: session.clone(),
                key: key.clone(),
                call_id: call,
                tool: "count".to_owned(),
                // The digest of step 1's arguments, as the journal stores it.
                args_digest: oxydra_tools::checkpoint::content_hash(
                    json!({"n": 1}).to_string().as_bytes(),
                ),
                before: None,
                created_at_ms: 1,
            })
            .await
            .unwrap();
        if let Some(status) = outcome {
            self.memory
                .store_intent_outcome(
                    &session,
                    &key,
                    &IntentOutcome {
                        status,
                        result_digest: "r".to_owned(),
                        finished_at_ms: 2,
                    },
                )
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn each_step_stores_its_intent_and_outcome_and_gets_its_key() {
    let setup = setup(RerunSafety::Unknown).await;
    let result = setup.runner.execute(setup.request(false)).await.unwrap();
    assert_eq!(setup.runs.load(Ordering::SeqCst), 2);
    let session = crate::run::session_for(&RunId::from("r1"));
    let intents = setup.memory.intents(&session).await.unwrap();
    assert_eq!(intents.len(), 2);
    assert!(intents.iter().all(|stored| {
        stored
            .outcome
            .as_ref()
            .is_some_and(|outcome| outcome.status == IntentStatus::Completed)
    }));
    let key = idempotency_key(&session, 0, &CallId::from("step_1"));
    assert_eq!(result["steps"][0]["output"], format!("run 1 key {key}"));
}

#[tokio::test]
async fn a_step_that_completed_before_the_takeover_is_not_run_again() {
    let setup = setup(RerunSafety::Unknown).await;
    setup
        .interrupted_step_one(Some(IntentStatus::Completed))
        .await;
    let result = setup.runner.execute(setup.request(true)).await.unwrap();
    assert_eq!(setup.runs.load(Ordering::SeqCst), 1, "only step 2 ran");
    let first = result["steps"][0]["output"].as_str().unwrap();
    assert!(first.contains("ran to completion"), "{first}");
}

#[tokio::test]
async fn a_step_whose_outcome_is_unknown_ends_the_run_without_running() {
    let setup = setup(RerunSafety::Unknown).await;
    setup.interrupted_step_one(None).await;
    let error = setup.runner.execute(setup.request(true)).await.unwrap_err();
    assert_eq!(setup.runs.load(Ordering::SeqCst), 0, "nothing ran");
    assert_eq!(error.kind, "step_failed");
    assert!(
        error.message.contains("outcome unknown"),
        "{}",
        error.message
    );
    let detail = error.detail.unwrap();
    assert_eq!(detail["error_kind"], "outcome_unknown");
    assert_eq!(detail["step"], 1);
}

#[tokio::test]
async fn a_step_its_tool_finds_undone_runs_and_one_found_done_does_not() {
    let safe = setup(RerunSafety::Safe).await;
    safe.interrupted_step_one(None).await;
    safe.runner.execute(safe.request(true)).await.unwrap();
    assert_eq!(
        safe.runs.load(Ordering::SeqCst),
        2,
        "step 1 ran again, then step 2"
    );

    let done = setup(RerunSafety::AlreadyDone).await;
    done.interrupted_step_one(None).await;
    let result = done.runner.execute(done.request(true)).await.unwrap();
    assert_eq!(done.runs.load(Ordering::SeqCst), 1, "only step 2 ran");
    let first = result["steps"][0]["output"].as_str().unwrap();
    assert!(first.contains("took effect"), "{first}");
}
