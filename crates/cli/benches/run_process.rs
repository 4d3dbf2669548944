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
//! Criterion measures the wall time of a run; the CPU time (user + system) of the child
//! comes from `getrusage(RUSAGE_CHILDREN)` and its peak RSS from its own `VmHWM`, and
//! both are printed.
//! Targets: ≤ 0.05 s CPU and ≤ 20 MiB peak RSS per run. The scenario is
//! `oxydra_test_support::file_read_scenario`, which `cargo xtask peer-cost` also runs
//! against rig.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use nix::sys::resource::{UsageWho, getrusage};
use oxydra_test_support::MockServer;
use oxydra_test_support::file_read_scenario::{self, CALLS_PER_TURN, PROMPT, REQUESTS, TURNS};

struct Usage {
    cpu: Duration,
}

fn children_usage() -> Usage {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let to_duration = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    Usage {
        cpu: to_duration(usage.user_time()) + to_duration(usage.system_time()),
    }
}

/// One whole `oxydra run`; returns its wall time, CPU time and peak RSS (KiB).
///
/// CPU comes from `getrusage(RUSAGE_CHILDREN)`. Peak RSS is the child's own `VmHWM`,
/// sampled from `/proc` while it runs: the children's `ru_maxrss` also counts pages a
/// fork copied from this (much larger) bench process before the exec, and overstates
/// the binary's footprint several times.
fn run_once(workspace: &std::path::Path) -> (Duration, Duration, u64) {
    let server = MockServer::start(file_read_scenario::replies()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let before = children_usage();
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxydra"))
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
        .arg(PROMPT)
        .env("HOME", state.path())
        .env("XDG_CONFIG_HOME", state.path())
        .env("XDG_DATA_HOME", state.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        if let Some(hwm) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|text| vm_hwm_kib(&text))
        {
            peak_kib = peak_kib.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let wall = start.elapsed();
    assert!(status.success(), "oxydra run failed: {status}");
    assert_eq!(server.requests().len(), REQUESTS);
    let after = children_usage();
    (wall, after.cpu.saturating_sub(before.cpu), peak_kib)
}

/// The `VmHWM` line of a `/proc/<pid>/status` text, in KiB.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn bench(c: &mut Criterion) {
    let workspace = tempfile::tempdir().unwrap();
    file_read_scenario::write_notes(workspace.path()).unwrap();

    // A measured warm-up run: CPU and peak RSS of one whole process.
    let (wall, cpu, rss) = run_once(workspace.path());
    println!(
        "oxydra run, {TURNS} turns x {CALLS_PER_TURN} file_read: wall {:.1} ms, CPU {:.1} ms, peak RSS {:.1} MiB",
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
        rss as f64 / 1024.0
    );

    let mut cpu_total = Duration::ZERO;
    let mut peak_kib = rss;
    let mut runs = 0u32;
    let mut group = c.benchmark_group("run_process");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("20_turns_8_parallel_file_reads", |b| {
        b.iter_custom(|iterations| {
            let mut wall_total = Duration::ZERO;
            for _ in 0..iterations {
                let (wall, cpu, rss) = run_once(workspace.path());
                wall_total += wall;
                cpu_total += cpu;
                peak_kib = peak_kib.max(rss);
                runs += 1;
            }
            wall_total
        });
    });
    group.finish();
    println!(
        "over {runs} runs: mean CPU {:.1} ms per run (target ≤ 50 ms), peak RSS {:.1} MiB (target ≤ 20 MiB)",
        cpu_total.as_secs_f64() * 1e3 / f64::from(runs.max(1)),
        peak_kib as f64 / 1024.0
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
