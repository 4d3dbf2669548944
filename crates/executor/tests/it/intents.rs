//! The intent journal: a side-effecting call's intent is recorded before the tool
//! starts and its outcome after, the key reaches the tool; read-only calls record
//! nothing; a journal that cannot store the intent keeps the call from running.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use oxydra_executor::ToolRule;
use oxydra_executor::{CallIntent, ExecutionContext, IntentJournal, ToolExecutionError};
use oxydra_tools::ToolOutput;
use oxydra_types::{SafetyTier, SessionId};

use crate::common::{FnTool, batch, call, echo, executor};

/// What the journal saw, in order.
#[derive(Debug, Default)]
struct Recording {
    log: Mutex<Vec<String>>,
    refuse: bool,
}

#[async_trait]
impl IntentJournal for Recording {
    async fn before_call(
        &self,
        _session: &SessionId,
        intent: CallIntent<'_>,
    ) -> Result<String, String> {
        if self.refuse {
            return Err("the database is gone".to_owned());
        }
        self.log.lock().unwrap().push(format!(
            "intent {} {} {}",
            intent.call.id,
            intent.tier.as_str(),
            intent.args
        ));
        Ok(format!("key-{}", intent.call.id))
    }

    async fn after_call(
        &self,
        _session: &SessionId,
        key: &str,
        outcome: &Result<ToolOutput, ToolExecutionError>,
    ) {
        let label = if outcome.is_ok() { "ok" } else { "failed" };
        self.log
            .lock()
            .unwrap()
            .push(format!("outcome {key} {label}"));
    }
}

fn context(journal: Arc<Recording>) -> ExecutionContext {
    ExecutionContext::new(SessionId::from("ses_j"), std::env::temp_dir())
        .with_intent_journal(journal)
}

#[tokio::test]
async fn a_side_effecting_call_is_journaled_around_its_run_and_gets_its_key() {
    let journal = Arc::new(Recording::default());
    let seen = Arc::clone(&journal);
    let writer = FnTool::new("write", SafetyTier::SideEffecting, move |_, ctx| {
        // The intent is stored before the tool starts.
        let log = seen.log.lock().unwrap().clone();
        let key = ctx.idempotency_key().map(str::to_owned);
        async move {
            assert_eq!(log.len(), 1, "{log:?}");
            Ok(ToolOutput::text(format!("key={}", key.unwrap_or_default())))
        }
    });
    let reader = echo("read", SafetyTier::ReadOnly);
    let ex = executor(&[writer.clone(), reader.clone()], Vec::<ToolRule>::new());
    let ctx = context(Arc::clone(&journal));
    let mut process = ex.new_process_state();
    let result = batch(
        &ex,
        &[call("r1", "read", "{}"), call("w1", "write", r#"{"a":1}"#)],
        &mut process,
        &ctx,
    )
    .await;
    let outputs: Vec<String> = result
        .records
        .iter()
        .map(|record| record.outcome.as_ref().unwrap().content.clone())
        .collect();
    assert_eq!(outputs[1], "key=key-w1");
    assert_eq!(
        *journal.log.lock().unwrap(),
        [
            r#"intent w1 side_effecting {"a":1}"#.to_owned(),
            "outcome key-w1 ok".to_owned()
        ],
        "the read-only call recorded nothing"
    );
}

#[tokio::test]
async fn a_failing_call_records_a_failed_outcome() {
    let journal = Arc::new(Recording::default());
    let failing = FnTool::new("boom", SafetyTier::Privileged, |_, _| async {
        Err(oxydra_tools::ToolError::Failed("no".to_owned()))
    });
    // Privileged tools need consent by default: approve it.
    let ex = executor(&[failing], Vec::<ToolRule>::new())
        .with_permission_broker(Arc::new(oxydra_executor::AlwaysApprove));
    let ctx = context(Arc::clone(&journal));
    let mut process = ex.new_process_state();
    batch(&ex, &[call("b1", "boom", "{}")], &mut process, &ctx).await;
    let log = journal.log.lock().unwrap().clone();
    assert_eq!(
        log.last().map(String::as_str),
        Some("outcome key-b1 failed"),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_call_whose_intent_cannot_be_stored_does_not_run() {
    let journal = Arc::new(Recording {
        refuse: true,
        ..Recording::default()
    });
    let writer = echo("write", SafetyTier::SideEffecting);
    let ex = executor(std::slice::from_ref(&writer), Vec::<ToolRule>::new());
    let ctx = context(journal);
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("w1", "write", "{}")], &mut process, &ctx).await;
    assert_eq!(writer.runs(), 0, "not run without its intent");
    let error = result.records[0].outcome.as_ref().unwrap_err().to_string();
    assert!(error.contains("intent could not be stored"), "{error}");
    assert!(error.contains("the database is gone"), "{error}");
}

#[tokio::test]
async fn without_a_journal_nothing_is_recorded_and_no_key_is_given() {
    let writer = FnTool::new("write", SafetyTier::SideEffecting, |_, ctx| {
        let key = ctx.idempotency_key().map(str::to_owned);
        async move { Ok(ToolOutput::text(format!("{key:?}"))) }
    });
    let ex = executor(&[writer], Vec::<ToolRule>::new());
    let ctx = ExecutionContext::new(SessionId::from("ses_n"), std::env::temp_dir());
    let mut process = ex.new_process_state();
    let result = batch(&ex, &[call("w1", "write", "{}")], &mut process, &ctx).await;
    assert_eq!(result.records[0].outcome.as_ref().unwrap().content, "None");
}
