#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! What capturing a checkpoint costs: the stat-first scan after a command over a
//! 1,000-file workspace (10 files changed, their before-state captured), and over a
//! 100,000-file workspace (the first scan, which reads what fits the cap, and the
//! rescan after a command, which stats everything and reads only what changed).
//!
//! Sized to finish in about a minute on a shared machine: few samples, short
//! measurement times, flat sampling for the slow 100k cases, and the 100k-file tree
//! built once, in a temporary directory, only when a bench that needs it runs (a
//! filter that leaves them out never builds it).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use oxydra_tools::checkpoint::{changes, scan};

const CAP: u64 = 64 * 1024 * 1024;

/// `files` files of ~200 bytes, 100 to a directory.
fn workspace(files: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for f in 0..files {
        let sub = root.join(format!("d{:04}", f / 100));
        if f % 100 == 0 {
            std::fs::create_dir(&sub).unwrap();
        }
        std::fs::write(sub.join(format!("f{f:06}.rs")), format!("{f:0200}\n")).unwrap();
    }
    (dir, root)
}

/// The 100,000-file tree, built on first use and kept for the process.
fn large() -> &'static Path {
    static TREE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &TREE.get_or_init(|| workspace(100_000)).1
}

fn touch_ten(root: &Path, round: usize) {
    for f in 0..10 {
        std::fs::write(
            root.join(format!("d0000/f{f:06}.rs")),
            format!("round {round}\n"),
        )
        .unwrap();
    }
}

fn per_command(c: &mut Criterion) {
    let (_dir, root) = workspace(1_000);
    let mut before = scan(&root, None, CAP).unwrap();
    let mut round = 0;
    let mut group = c.benchmark_group("checkpoint");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("command_1k_files_10_changed", |b| {
        b.iter(|| {
            round += 1;
            touch_ten(&root, round);
            let after = scan(&root, Some(&before), CAP).unwrap();
            let captured = changes(&root, &before, &after);
            assert_eq!(captured.entries.len(), 10);
            before = black_box(after);
        });
    });
    group.finish();
}

fn large_workspace(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkpoint_100k_files");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("first_scan", |b| {
        let root = large();
        b.iter(|| black_box(scan(root, None, CAP).unwrap().len()));
    });
    let mut state: Option<(PathBuf, oxydra_tools::checkpoint::Snapshot)> = None;
    let mut round = 0;
    group.bench_function("rescan_after_command_10_changed", |b| {
        let (root, before) = state.get_or_insert_with(|| {
            let root = large().to_path_buf();
            let before = scan(&root, None, CAP).unwrap();
            (root, before)
        });
        b.iter(|| {
            round += 1;
            touch_ten(root, round);
            let after = scan(root, Some(before), CAP).unwrap();
            black_box(changes(root, before, &after).entries.len());
            *before = after;
        });
    });
    group.finish();
}

criterion_group!(benches, per_command, large_workspace);
criterion_main!(benches);
