#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `POST /runs` on loopback with keep-alive: parameter validation, the SQLite insert
//! and the enqueue (the runs then execute a trivial deterministic step in the
//! background, as in production). Reports requests per second, sequentially and with
//! 8 concurrent clients, beside two reference points: `GET /runs/{id}` of a missing
//! run (one store read) and an unknown route (no store work: the HTTP floor).

mod common;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps, StepConfig};
use serde_json::json;

/// One `POST /runs` with its JSON content type (the API refuses a body without one),
/// which must be accepted.
async fn post_run(client: &reqwest::Client, url: &str, body: &str) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    response.bytes().await.unwrap();
}

fn bench(c: &mut Criterion) {
    let runtime = common::bench_runtime();
    let dir = tempfile::tempdir().unwrap();
    let (url, client) = runtime.block_on(async {
        let tools = common::echo_tools();
        let blueprint = BlueprintConfig::deterministic(
            "crawler",
            "Fetches a page",
            json!({"type": "object", "required": ["url"],
                "properties": {"url": {"type": "string", "format": "uri"}}}),
            vec![StepConfig::new("echo", json!({"text": "{{url}}"}))],
        );
        let config = CoordinatorConfig {
            db: Some(dir.path().join("bench.db")),
            ..CoordinatorConfig::default()
        };
        let coordinator =
            Coordinator::new(config, vec![blueprint], RunnerDeps::new(tools, dir.path()))
                .await
                .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/runs", listener.local_addr().unwrap());
        tokio::spawn(async move {
            coordinator
                .serve(listener, std::future::pending())
                .await
                .unwrap();
        });
        (
            url,
            oxydra_http::client_builder()
                .pool_max_idle_per_host(16)
                .build()
                .unwrap(),
        )
    });
    let body = json!({"agent_name": "crawler", "parameters": {"url": "https://example.com/a"}})
        .to_string();

    let mut group = c.benchmark_group("post_runs");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(1));
    group.bench_function("sequential", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    post_run(&client, &url, &body).await;
                }
                start.elapsed()
            })
        });
    });
    let missing = url.replace("/runs", "/runs/run_missing");
    group.bench_function("get_missing_run", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let response = client.get(&missing).send().await.unwrap();
                    response.bytes().await.unwrap();
                }
                start.elapsed()
            })
        });
    });
    let agents = url.replace("/runs", "/nowhere");
    group.bench_function("unknown_route_floor", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let response = client.get(&agents).send().await.unwrap();
                    response.bytes().await.unwrap();
                }
                start.elapsed()
            })
        });
    });
    group.bench_function("concurrent_8", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                let per_task = iters.div_ceil(8);
                let tasks: Vec<_> = (0..8)
                    .map(|_| {
                        let client = client.clone();
                        let url = url.clone();
                        let body = body.clone();
                        tokio::spawn(async move {
                            for _ in 0..per_task {
                                post_run(&client, &url, &body).await;
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
                let elapsed = start.elapsed();
                elapsed.mul_f64(iters as f64 / (per_task * 8) as f64)
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
