#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Whole-process cost of `oxydra run` on a 20-turn task: each turn asks for 8 parallel
//! `file_read` calls of small files, then the model answers. The provider is a local
//! OpenAI-format server (streaming), SQLite memory is on.
//!
//! Criterion measures the wall time of a run; the CPU time (user + system) and the peak
//! RSS of the child come from `getrusage(RUSAGE_CHILDREN)` and are printed.
//! Targets: ≤ 0.05 s CPU and ≤ 20 MiB peak RSS per run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use nix::sys::resource::{UsageWho, getrusage};
use oxydra_e2e::{Reply, ScriptServer, openai};

const TURNS: usize = 20;
const CALLS_PER_TURN: usize = 8;

fn script() -> Vec<Reply> {
    let mut replies = Vec::with_capacity(TURNS + 1);
    for turn in 0..TURNS {
        let ids: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!("call_{turn}_{call}"))
            .collect();
        let args: Vec<String> = (0..CALLS_PER_TURN)
            .map(|call| format!(r#"{{"path":"notes/file{call}.txt","offset":{}}}"#, turn + 1))
            .collect();
        let calls: Vec<(&str, &str, &str)> = ids
            .iter()
            .zip(&args)
            .map(|(id, args)| (id.as_str(), "file_read", args.as_str()))
            .collect();
        replies.push(openai::tool_calls(&calls));
    }
    replies.push(openai::text("All files read: the notes agree."));
    replies
}

struct Usage {
    cpu: Duration,
    max_rss_kib: i64,
}

fn children_usage() -> Usage {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let to_duration = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    Usage {
        cpu: to_duration(usage.user_time()) + to_duration(usage.system_time()),
        max_rss_kib: usage.max_rss(),
    }
}

/// One whole `oxydra run`; returns its wall time and CPU time.
fn run_once(workspace: &std::path::Path) -> (Duration, Duration) {
    let server = ScriptServer::start(script()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let before = children_usage();
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_oxydra"))
        .args([
            "run",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .args(["--max-turns", "25"])
        .arg("--db")
        .arg(state.path().join("oxydra.db"))
        .arg("--workspace")
        .arg(workspace)
        .arg("Read every note, twenty times, then summarise.")
        .env("HOME", state.path())
        .env("XDG_CONFIG_HOME", state.path())
        .env("XDG_DATA_HOME", state.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let wall = start.elapsed();
    assert!(status.success(), "oxydra run failed: {status}");
    assert_eq!(server.requests().len(), TURNS + 1);
    let after = children_usage();
    (wall, after.cpu.saturating_sub(before.cpu))
}

fn bench(c: &mut Criterion) {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("notes")).unwrap();
    for file in 0..CALLS_PER_TURN {
        let text: String = (1..=40)
            .map(|line| format!("note {file} line {line}: nothing urgent\n"))
            .collect();
        std::fs::write(workspace.path().join(format!("notes/file{file}.txt")), text).unwrap();
    }

    // A measured warm-up run: CPU and peak RSS of one whole process.
    let (wall, cpu) = run_once(workspace.path());
    let rss = children_usage().max_rss_kib;
    println!(
        "oxydra run, {TURNS} turns x {CALLS_PER_TURN} file_read: wall {:.1} ms, CPU {:.1} ms, peak RSS {:.1} MiB",
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
        rss as f64 / 1024.0
    );

    let mut cpu_total = Duration::ZERO;
    let mut runs = 0u32;
    let mut group = c.benchmark_group("run_process");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("20_turns_8_parallel_file_reads", |b| {
        b.iter_custom(|iterations| {
            let mut wall_total = Duration::ZERO;
            for _ in 0..iterations {
                let (wall, cpu) = run_once(workspace.path());
                wall_total += wall;
                cpu_total += cpu;
                runs += 1;
            }
            wall_total
        });
    });
    group.finish();
    let rss = children_usage().max_rss_kib;
    println!(
        "over {runs} runs: mean CPU {:.1} ms per run (target ≤ 50 ms), peak RSS {:.1} MiB (target ≤ 20 MiB)",
        cpu_total.as_secs_f64() * 1e3 / f64::from(runs.max(1)),
        rss as f64 / 1024.0
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
