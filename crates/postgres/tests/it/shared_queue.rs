//! Several coordinators on one PostgreSQL database: runs are claimed once, a cancel on
//! one coordinator stops the run on the one holding it, and a run whose holder died is
//! taken over and continued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunError, RunExecutor, RunOutcome, RunRequest,
    RunStatus, RunStore, SharedRunQueue,
};
use oxydra_postgres::PostgresRunStore;
use oxydra_postgres::testing::TestDatabase;
use serde_json::json;

/// Records who executed what; a prompt of `block` waits for cancellation.
#[derive(Default)]
struct Recorder {
    executed: Mutex<Vec<(String, String, bool)>>,
}

struct Tagged {
    tag: String,
    recorder: Arc<Recorder>,
}

#[async_trait]
impl RunExecutor for Tagged {
    async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
        self.recorder.executed.lock().unwrap().push((
            run.run_id.as_str().to_owned(),
            self.tag.clone(),
            run.resumed,
        ));
        if run.parameters["prompt"] == "block" {
            run.cancel.cancelled().await;
            return Err(RunError::cancelled());
        }
        Ok(json!({"by": self.tag}).into())
    }
}

fn config() -> CoordinatorConfig {
    CoordinatorConfig {
        max_concurrent_runs: 2,
        run_lease_ttl_ms: 300,
        cancel_wait_ms: 3000,
        ..CoordinatorConfig::default()
    }
}

async fn coordinator(test: &TestDatabase, tag: &str, recorder: &Arc<Recorder>) -> Coordinator {
    let store: Arc<dyn RunStore> = Arc::new(PostgresRunStore::new(test.connect().await));
    let executor: Arc<dyn RunExecutor> = Arc::new(Tagged {
        tag: tag.to_owned(),
        recorder: Arc::clone(recorder),
    });
    Coordinator::with_store(
        config(),
        vec![BlueprintConfig::agent("worker", "Works", "You work.")],
        store,
        move |_| executor,
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_executed_once_across_coordinators_and_read_the_same_everywhere() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let recorder = Arc::new(Recorder::default());
    let (a, b) = (
        coordinator(&test, "a", &recorder).await,
        coordinator(&test, "b", &recorder).await,
    );
    let mut ids = Vec::new();
    for i in 0..40 {
        let target = if i % 2 == 0 { &a } else { &b };
        ids.push(
            target
                .create_run("worker", json!({"prompt": format!("task {i}")}))
                .await
                .unwrap()
                .run_id,
        );
    }
    for id in &ids {
        let run = a.wait_for_run(id, Duration::from_secs(10)).await.unwrap();
        assert_eq!(run.status, RunStatus::Completed, "{run:?}");
        assert_eq!(b.get_run(id).await.unwrap(), run);
    }
    let executed = recorder.executed.lock().unwrap().clone();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (id, _, resumed) in &executed {
        *counts.entry(id.as_str()).or_default() += 1;
        assert!(!resumed);
    }
    assert_eq!(counts.len(), 40);
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_coordinator_stops_the_run_on_its_holder() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let (ra, rb) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let holder = coordinator(&test, "holder", &ra).await;
    let created = holder
        .create_run("worker", json!({"prompt": "block"}))
        .await
        .unwrap();
    // Wait until the holder runs it.
    for _ in 0..100 {
        if !ra.executed.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ra.executed.lock().unwrap().len(), 1);
    let other = coordinator(&test, "other", &rb).await;
    let run = other.cancel_run(&created.run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    assert!(rb.executed.lock().unwrap().is_empty());
    holder.shutdown().await;
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_holder_died_is_taken_over_and_the_dead_holder_is_fenced_off() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let store = PostgresRunStore::new(test.connect().await);
    let recorder = Arc::new(Recorder::default());
    // A coordinator stores a run; a worker that then dies claims it.
    let survivor = coordinator(&test, "survivor", &recorder).await;
    survivor.shutdown().await;
    let dead_holder = "dead-worker";
    let mut run = oxydra_coordinator::conformance::pending("orphan");
    run.agent_name = "worker".into();
    store.insert_run(run).await.unwrap();
    let claimed = store
        .claim_next(dead_holder, Duration::from_millis(100))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.run_id, "orphan");
    assert!(!claimed.resumed);
    // Nobody else gets it while the claim is live.
    assert!(
        store
            .claim_next("other", Duration::from_secs(5))
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::sleep(Duration::from_millis(150)).await;

    let survivor = coordinator(&test, "survivor", &recorder).await;
    let run = survivor
        .wait_for_run("orphan", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(run.result, Some(json!({"by": "survivor"})));
    assert_eq!(
        *recorder.executed.lock().unwrap(),
        [("orphan".to_owned(), "survivor".to_owned(), true)]
    );
    // The dead holder can neither renew nor end the run.
    assert_eq!(
        store
            .renew_claim("orphan", dead_holder, Duration::from_secs(5))
            .await
            .unwrap(),
        oxydra_coordinator::ClaimState::Lost
    );
    assert!(
        !store
            .finish_claimed("orphan", dead_holder, RunStatus::Failed, None, None)
            .await
            .unwrap()
    );
    survivor.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claimers_never_share_a_run() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let store = Arc::new(PostgresRunStore::new(test.connect().await));
    for i in 0..30 {
        store
            .insert_run(oxydra_coordinator::conformance::pending(&format!("r{i}")))
            .await
            .unwrap();
    }
    let claimers: Vec<_> = (0..6)
        .map(|worker| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                while let Some(run) = store
                    .claim_next(&format!("w{worker}"), Duration::from_secs(30))
                    .await
                    .unwrap()
                {
                    mine.push(run.run_id);
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.unwrap());
    }
    all.sort();
    let mut expected: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    expected.sort();
    assert_eq!(all, expected);
}
