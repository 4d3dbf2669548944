//! A clean approve and a clean deny log no error (issue 45, point 7): a run resumed
//! with a person's decisions goes on from where the run that asked ended
//! (`awaiting_approval`), so running the decided calls is a legal move of the turn
//! state machine, not `start` → `tool_execution`.

use crate::common;
use crate::deferred_approvals::{Deferring, HOUR, ShellTool, runtime};

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use oxydra_memory::SqliteMemory;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{ApprovalDecision, CollectingEventSink, RuntimeError};
use oxydra_types::SessionId;

/// Every log line written while it is the thread's subscriber.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Runs `ls` to its approval wait, decides it with `decision`, and returns the run's
/// answer and every log line (debug and up) of both runs.
async fn decided_run(decision: ApprovalDecision) -> (String, String) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // The test runs on one thread (the current-thread runtime): the run's tasks log here.
    let _default = tracing::subscriber::set_default(subscriber);
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let events = Arc::new(CollectingEventSink::new());
    let shell = ShellTool::default();
    let session = SessionId::generate();
    let asking = runtime(
        scripted(vec![ScriptedTurn::tool_call(
            "c1",
            "shell",
            r#"{"command":"ls"}"#,
        )]),
        &events,
        &shell,
        Deferring::new(HOUR),
        Some(memory.clone()),
    );
    let pending = match asking.session(&session).prompt("ls").await {
        Err(RuntimeError::AwaitingApproval { pending }) => pending,
        other => panic!("expected a wait for approval, got {other:?}"),
    };
    let resuming = runtime(
        scripted(vec![ScriptedTurn::text("done")]),
        &events,
        &shell,
        Deferring::new(HOUR),
        Some(memory),
    );
    let outcome = resuming
        .session(&session)
        .decide(pending[0].clone(), decision)
        .await
        .unwrap();
    (outcome.final_text, logs.text())
}

/// No line of `logs` is at level ERROR; the capture saw the resume's moves (so an
/// empty capture cannot pass).
fn assert_clean(logs: &str) {
    let errors: Vec<&str> = logs.lines().filter(|line| line.contains("ERROR")).collect();
    assert!(errors.is_empty(), "error lines: {errors:#?}");
    assert!(
        logs.contains(r#"from="tool_execution" to="awaiting_approval""#),
        "{logs}"
    );
    assert!(
        logs.contains(r#"from="awaiting_approval" to="tool_execution""#),
        "{logs}"
    );
    assert!(
        !logs.contains(r#"from="start" to="tool_execution""#),
        "{logs}"
    );
}

#[tokio::test]
async fn a_clean_approval_logs_no_error() {
    let (answer, logs) = decided_run(ApprovalDecision::ApproveOnce).await;
    assert_eq!(answer, "done");
    assert_clean(&logs);
}

#[tokio::test]
async fn a_clean_denial_logs_no_error() {
    let (answer, logs) = decided_run(ApprovalDecision::Deny {
        reason: Some("not now".to_owned()),
    })
    .await;
    assert_eq!(answer, "done");
    assert_clean(&logs);
}
