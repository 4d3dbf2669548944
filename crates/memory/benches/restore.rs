#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Restoring a 10,000-message session from a file database.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_types::{CallId, Message, SessionId, ToolCall};

/// CPU time (user + system) of this process so far, from /proc (Linux), in seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn bench_restore(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let session = SessionId::from("ses_bench_restore");
    {
        let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
        rt.block_on(async {
            for i in 0..2_500 {
                let call = ToolCall::new(
                    CallId::from(format!("call_{i}")),
                    "file_read",
                    r#"{"path":"src/lib.rs"}"#,
                );
                let turn = [
                    Message::user(format!(
                        "question number {i}: what does the code in src/lib.rs do?"
                    )),
                    Message::assistant_with_tool_calls(
                        Some("Let me look.".into()),
                        vec![call.clone()],
                    ),
                    Message::tool_result(
                        call.id,
                        "file_read",
                        "//! A crate.\npub fn main() {}\n".repeat(4),
                    ),
                    Message::assistant(format!(
                        "Answer {i}: it defines a crate with a main function."
                    )),
                ];
                for message in &turn {
                    memory.append(&session, message).await.unwrap();
                }
            }
        });
    }
    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let cpu_before = cpu_seconds();
    let mut times: Vec<Duration> = (0..30)
        .map(|_| {
            let started = Instant::now();
            let restored = rt.block_on(memory.restore(&session)).unwrap();
            assert_eq!(restored.len(), 10_000);
            started.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "restore 10,000 messages: median {:?}, max {:?}",
        times[15], times[29]
    );
    if let (Some(before), Some(after)) = (cpu_before, cpu_seconds()) {
        println!(
            "restore 10,000 messages: {:.1} ms of CPU each",
            (after - before) / 30.0 * 1e3
        );
    }

    let mut group = c.benchmark_group("memory");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("restore_10k", |b| {
        b.iter(|| rt.block_on(memory.restore(&session)).unwrap());
    });
    group.finish();
}

criterion_group!(benches, bench_restore);
criterion_main!(benches);
