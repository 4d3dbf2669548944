#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! What a person's console asks most, on a store holding 1,000 runs of which 100
//! wait for an approval, through the real router on loopback with keep-alive:
//! `GET /runs?limit=50` (the newest page), the same page of one status, the second
//! page (a keyset cursor), and `GET /approvals` (the 100 waiting requests, each with
//! its preview). Target: a page of 50 runs in under 5 ms.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_coordinator::conformance::{approvals::request, pending};
use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunStatus, RunStore, RunnerDeps,
    SqliteRunStore, StepConfig,
};
use serde_json::{Value, json};

/// Runs in the store, and how many of them wait for an approval.
const RUNS: usize = 1_000;
const WAITING: usize = 100;

/// A store of [`RUNS`] runs: every tenth waits for an approval, the others completed.
async fn filled_store(path: &std::path::Path) -> SqliteRunStore {
    let path = path.to_owned();
    let store = tokio::task::spawn_blocking(move || SqliteRunStore::open(Some(&path)))
        .await
        .unwrap()
        .unwrap();
    let hour = Duration::from_secs(3600);
    for i in 0..RUNS {
        let id = format!("run_{i:04}");
        store.insert_run(pending(&id)).await.unwrap();
        store.start_run(&id).await.unwrap().unwrap();
        if i % (RUNS / WAITING) == 0 {
            let asked = request(&format!("apr_{i:04}"), now_millis(), hour);
            assert!(store.suspend_run(&id, vec![asked]).await.unwrap());
        } else {
            store
                .finish_run(
                    &id,
                    RunStatus::Completed,
                    Some(json!({"text": format!("answer {i}")})),
                    None,
                )
                .await
                .unwrap();
        }
    }
    store
}

/// Now in Unix milliseconds.
fn now_millis() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// One GET that must answer 200; its body's bytes.
async fn get(client: &reqwest::Client, url: &str) -> usize {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.bytes().await.unwrap().len()
}

fn bench(c: &mut Criterion) {
    let runtime = common::bench_runtime();
    let dir = tempfile::tempdir().unwrap();
    let (base, client) = runtime.block_on(async {
        let store = filled_store(&dir.path().join("bench.db")).await;
        let tools = common::echo_tools();
        let blueprint = BlueprintConfig::deterministic(
            "researcher",
            "Echoes its prompt",
            json!({"type": "object", "required": ["prompt"],
                "properties": {"prompt": {"type": "string"}}}),
            vec![StepConfig::new("echo", json!({"text": "{{prompt}}"}))],
        );
        let coordinator = Coordinator::with_deps_and_store(
            CoordinatorConfig::default(),
            vec![blueprint],
            RunnerDeps::new(tools, dir.path()),
            Arc::new(store),
        )
        .await
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            coordinator
                .serve(listener, std::future::pending())
                .await
                .unwrap();
        });
        (base, oxydra_http::client_builder().build().unwrap())
    });
    // The store holds what the bench says it does.
    let (first, approvals) = runtime.block_on(async {
        let page: Value = client
            .get(format!("{base}/runs?limit=50"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let approvals: Value = client
            .get(format!("{base}/approvals"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (page, approvals)
    });
    assert_eq!(first["runs"].as_array().unwrap().len(), 50);
    assert_eq!(approvals["approvals"].as_array().unwrap().len(), WAITING);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();

    let mut group = c.benchmark_group("list_runs_1000");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    let cases = [
        ("runs_page_50", format!("{base}/runs?limit=50")),
        (
            "runs_page_50_waiting",
            format!("{base}/runs?limit=50&status=waiting_approval"),
        ),
        (
            "runs_second_page_50",
            format!("{base}/runs?limit=50&cursor={cursor}"),
        ),
        ("approvals_100", format!("{base}/approvals")),
    ];
    for (name, url) in cases {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let start = Instant::now();
                    let mut bytes = 0;
                    for _ in 0..iters {
                        bytes += get(&client, &url).await;
                    }
                    assert!(bytes > 0);
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
