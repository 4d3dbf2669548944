//! Batch planning asserted structurally: barriers, in-flight counters, release order.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{FnTool, InFlight, call, ctx, echo, executor, executor_with};
use oxydra_executor::{CollectingEventSink, NoopEventSink, ToolExecutionError, ToolExecutorConfig};
use oxydra_tools::ToolOutput;
use oxydra_types::{RuntimeEvent, SafetyTier};
use tokio::sync::{Barrier, oneshot};

/// A read-only tool that waits on `barrier` while counted in flight.
fn barrier_reader(name: &str, flight: &Arc<InFlight>, barrier: &Arc<Barrier>) -> FnTool {
    let (flight, barrier) = (Arc::clone(flight), Arc::clone(barrier));
    FnTool::new(name, SafetyTier::ReadOnly, move |_, _| {
        let (flight, barrier) = (Arc::clone(&flight), Arc::clone(&barrier));
        async move {
            flight.enter();
            barrier.wait().await;
            flight.leave();
            Ok(ToolOutput::text("read"))
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_read_only_calls_are_all_in_flight_at_once() {
    const N: usize = 8;
    let flight = Arc::new(InFlight::default());
    let barrier = Arc::new(Barrier::new(N));
    let ex = executor(&[barrier_reader("read", &flight, &barrier)], vec![]);
    let mut process = ex.new_process_state();
    let calls: Vec<_> = (0..N)
        .map(|i| call(&i.to_string(), "read", &format!("{{\"i\":{i}}}")))
        .collect();
    let result = tokio::time::timeout(
        Duration::from_secs(2),
        ex.execute_batch(&calls, &mut process, &ctx(), &NoopEventSink),
    )
    .await
    .expect("the barrier of N is only passed if all N calls overlap");
    assert!(result.all_succeeded());
    assert_eq!(flight.max(), N);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_effecting_call_splits_the_read_only_group_and_runs_alone() {
    let flight = Arc::new(InFlight::default());
    let barrier = Arc::new(Barrier::new(2));
    let seen_by_write = Arc::new(Mutex::new(Vec::new()));
    let (f, seen) = (Arc::clone(&flight), Arc::clone(&seen_by_write));
    let write = FnTool::new("write", SafetyTier::SideEffecting, move |_, _| {
        let (f, seen) = (Arc::clone(&f), Arc::clone(&seen));
        async move {
            seen.lock().unwrap().push(f.enter());
            f.leave();
            Ok(ToolOutput::text("written"))
        }
    });
    let ex = executor(&[barrier_reader("read", &flight, &barrier), write], vec![]);
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "read", r#"{"i":1}"#),
        call("2", "read", r#"{"i":2}"#),
        call("3", "write", "{}"),
        call("4", "read", r#"{"i":4}"#),
        call("5", "read", r#"{"i":5}"#),
    ];
    let result = tokio::time::timeout(
        Duration::from_secs(2),
        ex.execute_batch(&calls, &mut process, &ctx(), &NoopEventSink),
    )
    .await
    .expect("each pair of reads overlaps");
    assert!(result.all_succeeded());
    assert_eq!(flight.max(), 2);
    assert_eq!(*seen_by_write.lock().unwrap(), vec![1]);
    // The write started after both earlier reads finished and before the later ones began.
    assert!(result.records[2].started_at >= result.records[1].finished_at);
    assert!(result.records[2].finished_at <= result.records[3].started_at);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_parallel_caps_a_group() {
    let flight = Arc::new(InFlight::default());
    let f = Arc::clone(&flight);
    let read = FnTool::new("read", SafetyTier::ReadOnly, move |_, _| {
        let f = Arc::clone(&f);
        async move {
            f.enter();
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
            f.leave();
            Ok(ToolOutput::text("read"))
        }
    });
    let config = ToolExecutorConfig {
        max_parallel: 3,
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(&[read], vec![], config);
    let mut process = ex.new_process_state();
    let calls: Vec<_> = (0..9)
        .map(|i| call(&i.to_string(), "read", &format!("{{\"i\":{i}}}")))
        .collect();
    let result = ex
        .execute_batch(&calls, &mut process, &ctx(), &NoopEventSink)
        .await;
    assert!(result.all_succeeded());
    assert_eq!(flight.max(), 3);
}

#[tokio::test]
async fn results_come_back_in_request_order_when_calls_finish_in_reverse() {
    // Call k waits for its release; when it finishes it releases call k-1. The test
    // releases the last call only, so completion order is strictly 3, 2, 1.
    let mut senders = HashMap::new();
    let mut receivers = HashMap::new();
    for k in 1..=3_u64 {
        let (tx, rx) = oneshot::channel::<()>();
        senders.insert(k, tx);
        receivers.insert(k, rx);
    }
    let last = senders.remove(&3).unwrap();
    let receivers = Arc::new(Mutex::new(receivers));
    let senders = Arc::new(Mutex::new(senders));
    let finished = Arc::new(Mutex::new(Vec::new()));
    let fin = Arc::clone(&finished);
    let gated = FnTool::new("gated", SafetyTier::ReadOnly, move |args, _| {
        let k = args["k"].as_u64().unwrap();
        let rx = receivers.lock().unwrap().remove(&k).unwrap();
        let next = senders.lock().unwrap().remove(&(k - 1));
        let fin = Arc::clone(&fin);
        async move {
            rx.await.unwrap();
            fin.lock().unwrap().push(k);
            if let Some(next) = next {
                next.send(()).unwrap();
            }
            Ok(ToolOutput::text(format!("done {k}")))
        }
    });
    let ex = executor(&[gated], vec![]);
    let mut process = ex.new_process_state();
    let calls = [
        call("c1", "gated", r#"{"k":1}"#),
        call("c2", "gated", r#"{"k":2}"#),
        call("c3", "gated", r#"{"k":3}"#),
    ];
    let ctx = ctx();
    let batch = ex.execute_batch(&calls, &mut process, &ctx, &NoopEventSink);
    let release = async {
        tokio::task::yield_now().await;
        last.send(()).unwrap();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(2), async {
        tokio::join!(batch, release)
    })
    .await
    .unwrap();
    assert_eq!(*finished.lock().unwrap(), vec![3, 2, 1]);
    let ids: Vec<&str> = result.records.iter().map(|r| r.call.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    let texts: Vec<String> = result
        .records
        .iter()
        .map(|r| r.content_for_model())
        .collect();
    assert_eq!(texts, ["done 1", "done 2", "done 3"]);
    assert!(result.records[2].finished_at <= result.records[0].finished_at);
}

#[tokio::test]
async fn every_tool_started_comes_before_any_completion() {
    let ex = executor(
        &[
            echo("read", SafetyTier::ReadOnly),
            echo("write", SafetyTier::SideEffecting),
        ],
        vec![],
    );
    let mut process = ex.new_process_state();
    let calls = [
        call("1", "read", r#"{"a":1}"#),
        call("2", "write", "{}"),
        call("3", "nope", "{}"),
        call("4", "read", "not json"),
        call("5", "read", r#"{"a":5}"#),
    ];
    let sink = CollectingEventSink::new();
    let result = ex.execute_batch(&calls, &mut process, &ctx(), &sink).await;
    let events = sink.take();
    assert_eq!(events.len(), 10);
    for (i, event) in events.iter().take(5).enumerate() {
        let RuntimeEvent::ToolStarted { call_id, tier, .. } = event else {
            panic!("event {i} should be ToolStarted: {event:?}");
        };
        assert_eq!(call_id.as_str(), calls[i].id.as_str());
        let expected = if i == 1 {
            SafetyTier::SideEffecting
        } else {
            SafetyTier::ReadOnly
        };
        assert_eq!(*tier, expected);
    }
    let mut completed = 0;
    let mut failed = Vec::new();
    for event in &events[5..] {
        match event {
            RuntimeEvent::ToolCompleted { .. } => completed += 1,
            RuntimeEvent::ToolFailed { call_id, error, .. } => {
                failed.push((call_id.as_str().to_owned(), error.clone()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(completed, 3);
    assert_eq!(failed.len(), 2);
    assert!(
        failed
            .iter()
            .any(|(id, e)| id == "3" && e.contains("unknown tool `nope`"))
    );
    assert!(
        failed
            .iter()
            .any(|(id, e)| id == "4" && e.contains("not valid JSON"))
    );
    assert_eq!(result.failures(), 2);
}

#[tokio::test]
async fn events_go_to_a_channel_sink() {
    let ex = executor(&[echo("read", SafetyTier::ReadOnly)], vec![]);
    let mut process = ex.new_process_state();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ex.execute_batch(&[call("1", "read", "{}")], &mut process, &ctx(), &tx)
        .await;
    assert!(matches!(
        rx.recv().await,
        Some(RuntimeEvent::ToolStarted { .. })
    ));
    assert!(matches!(
        rx.recv().await,
        Some(RuntimeEvent::ToolCompleted { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_of_different_sessions_run_on_spawned_tasks() {
    // The futures are Send, so callers can spawn them; one executor serves many sessions.
    let ex = Arc::new(executor(&[echo("read", SafetyTier::ReadOnly)], vec![]));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let ex = Arc::clone(&ex);
            tokio::spawn(async move {
                let mut process = ex.new_process_state();
                let calls = [call(&i.to_string(), "read", "{}")];
                let ctx = ctx();
                let batch = ex
                    .execute_batch(&calls, &mut process, &ctx, &NoopEventSink)
                    .await;
                let start = ex
                    .execute_start_constraints(&mut process, &ctx, &NoopEventSink)
                    .await;
                let exit = ex
                    .execute_exit_requirements(&mut process, &ctx, &NoopEventSink)
                    .await;
                (
                    batch.records[0].content_for_model(),
                    start.records.len() + exit.records.len(),
                )
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.await.unwrap(), ("read:{}".to_owned(), 0));
    }
}

#[tokio::test]
async fn max_parallel_beyond_what_a_semaphore_holds_is_clamped() {
    let config = ToolExecutorConfig {
        max_parallel: usize::MAX,
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(&[echo("read", SafetyTier::ReadOnly)], vec![], config);
    let calls = [
        call("1", "read", r#"{"i":1}"#),
        call("2", "read", r#"{"i":2}"#),
    ];
    let result = ex
        .execute_batch(&calls, &mut ex.new_process_state(), &ctx(), &NoopEventSink)
        .await;
    assert!(result.all_succeeded());
}

#[tokio::test]
async fn a_tool_panicking_as_it_is_called_fails_only_its_own_call() {
    let boom = FnTool::new("boom", SafetyTier::ReadOnly, |_, _| {
        if std::hint::black_box(true) {
            panic!("boom before any future");
        }
        async { Ok(ToolOutput::text("never")) }
    });
    let ex = executor(&[boom, echo("read", SafetyTier::ReadOnly)], vec![]);
    let calls = [call("1", "boom", "{}"), call("2", "read", "{}")];
    let result = ex
        .execute_batch(&calls, &mut ex.new_process_state(), &ctx(), &NoopEventSink)
        .await;
    assert!(matches!(
        result.records[0].outcome,
        Err(ToolExecutionError::Panicked { .. })
    ));
    assert_eq!(result.records[1].content_for_model(), "read:{}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_a_group_keep_their_own_timeouts_and_are_cancelled_together() {
    let forever = FnTool::new("forever", SafetyTier::ReadOnly, |_, tool_ctx| async move {
        tool_ctx.cancel.cancelled().await;
        Ok(ToolOutput::text("stopped"))
    });
    let config = ToolExecutorConfig {
        execution_timeout: Duration::from_millis(30),
        ..ToolExecutorConfig::default()
    };
    let ex = executor_with(
        &[forever, echo("read", SafetyTier::ReadOnly)],
        vec![],
        config,
    );
    // A timeout ends only the call that hangs; the other call of its group succeeds.
    let calls = [call("1", "forever", "{}"), call("2", "read", "{}")];
    let result = ex
        .execute_batch(&calls, &mut ex.new_process_state(), &ctx(), &NoopEventSink)
        .await;
    assert!(matches!(
        result.records[0].outcome,
        Err(ToolExecutionError::Timeout { .. })
    ));
    assert_eq!(result.records[1].content_for_model(), "read:{}");

    // Cancelling the batch ends every call of the group, promptly.
    let ex = executor(
        &[FnTool::new("forever", SafetyTier::ReadOnly, |_, _| async {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        })],
        vec![],
    );
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let calls = [
        call("1", "forever", r#"{"i":1}"#),
        call("2", "forever", r#"{"i":2}"#),
    ];
    let result = tokio::time::timeout(
        Duration::from_secs(1),
        ex.execute_batch(&calls, &mut ex.new_process_state(), &ctx, &NoopEventSink),
    )
    .await
    .expect("cancellation must be prompt");
    for record in &result.records {
        assert!(matches!(record.outcome, Err(ToolExecutionError::Cancelled)));
    }
}
