#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Append throughput: each message its own committed transaction (file db, WAL, NORMAL).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_types::{Message, SessionId};

/// CPU time (user + system) of this process so far, from /proc (Linux), in seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn bench_append(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let memory = SqliteMemory::open(dir.path().join("bench.db"), SqliteConfig::default()).unwrap();
    let session = SessionId::from("ses_bench_append");
    let message = Message::user(
        "a typical user message of about one hundred bytes, asking the agent to do something useful",
    );

    // A plain measurement of sustained throughput, printed for the report.
    let count = 20_000;
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    rt.block_on(async {
        for _ in 0..count {
            memory.append(&session, &message).await.unwrap();
        }
    });
    let elapsed = started.elapsed();
    println!(
        "append: {count} committed appends in {elapsed:?} = {:.0} messages/s",
        count as f64 / elapsed.as_secs_f64()
    );
    if let (Some(before), Some(after)) = (cpu_before, cpu_seconds()) {
        let per = (after - before) / count as f64;
        println!(
            "append: {:.1} µs of CPU per append (= {:.0}/s if the CPU were not shared)",
            per * 1e6,
            1.0 / per
        );
    }

    let mut group = c.benchmark_group("memory");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("append_committed", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    memory.append(&session, &message).await.unwrap();
                }
                started.elapsed()
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench_append);
criterion_main!(benches);
