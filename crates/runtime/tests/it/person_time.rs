//! A consent question waits for the person, not for the turn budget (issue 45, point
//! 4): the tool batch's `turn_timeout` runs on a clock that stands still while the
//! permission broker is asked; the question is bounded by the executor's
//! `permission_timeout` instead. On paused time: the broker holds its answer until
//! long after the turn timeout would have fired.

use crate::common;
use crate::deferred_approvals::ShellTool;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use oxydra_executor::{
    PermissionBroker, PermissionDecision, PermissionRequest, ToolExecutorConfig,
};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{AgentRuntime, CollectingEventSink, RuntimeLimits};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

const TURN_TIMEOUT: Duration = Duration::from_secs(2);

/// Tells the test it was asked, then answers `decision` once the test releases it.
struct Person {
    asked: Notify,
    answer: Notify,
    decision: PermissionDecision,
}

#[async_trait]
impl PermissionBroker for Person {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        self.asked.notify_one();
        self.answer.notified().await;
        self.decision.clone()
    }
}

fn person(decision: PermissionDecision) -> Arc<Person> {
    Arc::new(Person {
        asked: Notify::new(),
        answer: Notify::new(),
        decision,
    })
}

fn runtime_with(
    broker: Arc<Person>,
    tools: Vec<Arc<dyn Tool>>,
    permission_timeout: Duration,
) -> AgentRuntime {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "shell", r#"{"command":"ls"}"#),
        ScriptedTurn::text("done"),
    ]);
    builder(provider, Arc::new(CollectingEventSink::new()))
        .tools(registry(tools))
        .permission_broker(broker)
        .executor_config(ToolExecutorConfig {
            permission_timeout,
            ..ToolExecutorConfig::default()
        })
        .limits({
            let mut limits = RuntimeLimits::default();
            limits.turn_timeout = TURN_TIMEOUT;
            limits
        })
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_answer_after_the_turn_timeout_still_runs_the_call() {
    let broker = person(PermissionDecision::ApproveOnce);
    let shell = ShellTool::default();
    let runtime = runtime_with(
        broker.clone(),
        vec![Arc::new(shell.clone())],
        Duration::from_secs(24 * 3600),
    );
    let session = SessionId::generate();
    let run = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.session(&session).prompt("ls").await }
    });
    broker.asked.notified().await;
    let asked_at = Instant::now();
    // The person thinks for an hour: 1800 turn timeouts.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!run.is_finished(), "the run gave up on the person");
    broker.answer.notify_one();
    let outcome = run.await.unwrap().unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
    assert!(asked_at.elapsed() >= Duration::from_secs(3600));
}

#[tokio::test(start_paused = true)]
async fn a_question_is_bounded_by_the_permission_timeout_not_the_turn() {
    let broker = person(PermissionDecision::ApproveOnce);
    let shell = ShellTool::default();
    let runtime = runtime_with(
        broker.clone(),
        vec![Arc::new(shell.clone())],
        Duration::from_secs(600),
    );
    let session = SessionId::generate();
    let started = Instant::now();
    // Nobody answers: after the permission timeout the call is denied, the model
    // reads the denial and answers.
    let outcome = runtime.session(&session).prompt("ls").await.unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    assert!(started.elapsed() >= Duration::from_secs(600));
    assert!(started.elapsed() < Duration::from_secs(601));
}

/// `shell {command}` that takes `takes` to run once approved.
struct SlowShell {
    takes: Duration,
}

#[async_trait]
impl Tool for SlowShell {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "shell",
            "Runs a command",
            json!({"type":"object","properties":{"command":{"type":"string"}}}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(self.takes).await;
        Ok(ToolOutput::text("ran"))
    }
}

#[tokio::test(start_paused = true)]
async fn the_clock_runs_again_once_the_person_answered() {
    let broker = person(PermissionDecision::ApproveOnce);
    let runtime = runtime_with(
        broker.clone(),
        vec![Arc::new(SlowShell {
            takes: TURN_TIMEOUT * 3,
        })],
        Duration::from_secs(3600),
    );
    let session = SessionId::generate();
    let run = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.session(&session).prompt("ls").await }
    });
    broker.asked.notified().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    broker.answer.notify_one();
    // The call itself outlasts the turn timeout: that still ends the run.
    let error = run.await.unwrap().unwrap_err();
    assert_eq!(error.kind(), "budget_exceeded", "{error}");
    let message = error.to_string();
    assert!(message.contains("turn_timeout"), "{message}");
    assert!(message.contains("consent question"), "{message}");
}
