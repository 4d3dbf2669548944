#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Scale-out on PostgreSQL: runs per second from `create_run` (what `POST /runs` does
//! after parsing) to `completed`, with 1, 2 and 4 coordinators ("workers", each with
//! its own connection pool and `max_concurrent_runs = 4`) sharing one database; every
//! run is an AI agent run against the scripted mock provider over HTTP (one provider
//! call, its session stored in PostgreSQL). Also the latency of one claim
//! (`claim_next`) under contention, whose p99 is printed.
//!
//! Needs the test server (`OXYDRA_TEST_POSTGRES_URL`); without it the bench says so and
//! measures nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunStatus, RunStore, RunnerDeps,
    SharedRunQueue,
};
use oxydra_memory::Memory;
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, PostgresRunStore};
use oxydra_provider::{OpenAiProvider, Provider, ProviderConfig};
use oxydra_test_support::{MockServer, openai};
use oxydra_tools::ToolRegistry;
use serde_json::json;

const BATCH: u64 = 64;

async fn workers(test: &TestDatabase, count: usize, provider_url: &str) -> Vec<Coordinator> {
    let mut out = Vec::new();
    for _ in 0..count {
        let db = test.connect().await;
        let memory: Arc<dyn Memory> = Arc::new(PostgresMemory::new(db.clone(), Default::default()));
        let store: Arc<dyn RunStore> = Arc::new(PostgresRunStore::new(db));
        let provider: Arc<dyn Provider> =
            Arc::new(OpenAiProvider::new(ProviderConfig::new(provider_url, None)));
        let mut deps = RunnerDeps::new(ToolRegistry::new(), ".").with_provider(provider, "mock");
        deps.memory = Some(memory);
        let config = CoordinatorConfig {
            max_concurrent_runs: 4,
            ..CoordinatorConfig::default()
        };
        let blueprints = vec![BlueprintConfig::agent("worker", "Works", "You work.")];
        out.push(
            Coordinator::with_deps_and_store(config, blueprints, deps, store)
                .await
                .unwrap(),
        );
    }
    out
}

fn throughput(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let provider = MockServer::builder()
        .replies(vec![openai::text("done")])
        .repeat_last()
        .start()
        .unwrap();
    let mut group = c.benchmark_group("postgres_scale_out");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(BATCH));
    for count in [1_usize, 2, 4] {
        let Some(test) = runtime.block_on(TestDatabase::create()) else {
            return;
        };
        let coordinators = runtime.block_on(workers(&test, count, &provider.openai_url()));
        group.bench_function(format!("runs_completed/{count}_workers"), |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iterations {
                        let mut ids = Vec::with_capacity(BATCH as usize);
                        for i in 0..BATCH as usize {
                            let coordinator = &coordinators[i % coordinators.len()];
                            let created = coordinator
                                .create_run("worker", json!({"prompt": format!("task {i}")}))
                                .await
                                .unwrap();
                            ids.push(created.run_id);
                        }
                        for id in &ids {
                            let run = coordinators[0]
                                .wait_for_run(id, Duration::from_secs(60))
                                .await
                                .unwrap();
                            assert_eq!(run.status, RunStatus::Completed, "{run:?}");
                        }
                    }
                    start.elapsed()
                })
            });
        });
        runtime.block_on(async {
            for coordinator in coordinators {
                coordinator.shutdown().await;
            }
        });
    }
    group.finish();
}

/// One claim among `claimers` concurrent claimers; prints the p99 of all claims.
fn claim_latency(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(test) = runtime.block_on(TestDatabase::create()) else {
        return;
    };
    let store = Arc::new(PostgresRunStore::new(runtime.block_on(test.connect())));
    let mut group = c.benchmark_group("postgres_claim");
    group.sample_size(10);
    for claimers in [1_usize, 4] {
        let mut latencies: Vec<Duration> = Vec::new();
        group.throughput(Throughput::Elements(claimers as u64));
        group.bench_function(format!("claim_next/{claimers}_concurrent"), |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    // Enough pending runs for every claim of this sample.
                    let total = iterations as usize * claimers;
                    for i in 0..total {
                        let mut run = oxydra_coordinator::conformance::pending(&format!(
                            "c{claimers}-{}-{i}",
                            latencies.len()
                        ));
                        run.agent_name = "worker".into();
                        store.insert_run(run).await.unwrap();
                    }
                    let start = Instant::now();
                    let tasks: Vec<_> = (0..claimers)
                        .map(|worker| {
                            let store = Arc::clone(&store);
                            tokio::spawn(async move {
                                let mut mine = Vec::new();
                                for _ in 0..iterations {
                                    let began = Instant::now();
                                    store
                                        .claim_next(&format!("w{worker}"), Duration::from_secs(60))
                                        .await
                                        .unwrap()
                                        .unwrap();
                                    mine.push(began.elapsed());
                                }
                                mine
                            })
                        })
                        .collect();
                    for task in tasks {
                        latencies.extend(task.await.unwrap());
                    }
                    start.elapsed()
                })
            });
        });
        latencies.sort();
        if let Some(p99) = latencies.get(latencies.len() * 99 / 100) {
            println!(
                "claim_next with {claimers} concurrent claimers: p50 {:?}, p99 {p99:?} over {} claims",
                latencies[latencies.len() / 2],
                latencies.len()
            );
        }
    }
    group.finish();
}

criterion_group!(benches, throughput, claim_latency);
criterion_main!(benches);
