#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `file_search` throughput over a 4 MiB workspace of text files, and the cost of
//! truncating 1 MiB of output.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_tools::builtin::FileSearch;
use oxydra_tools::{BuiltinToolsConfig, Tool, ToolContext, truncate_output};
use tokio_util::sync::CancellationToken;

const FILES: usize = 64;
const FILE_BYTES: usize = 64 * 1024;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..FILES {
        let mut text = String::with_capacity(FILE_BYTES + 64);
        let mut line = 0;
        while text.len() < FILE_BYTES {
            if line % 500 == 7 {
                text.push_str(&format!("fn needle_{f}_{line}() {{ /* the one */ }}\n"));
            } else {
                text.push_str(&format!(
                    "    let value_{line} = compute({line}, \"some text\");\n"
                ));
            }
            line += 1;
        }
        std::fs::write(dir.path().join(format!("file_{f:03}.rs")), text).unwrap();
    }
    dir
}

fn bench(c: &mut Criterion) {
    let dir = workspace();
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tool = FileSearch::new(&BuiltinToolsConfig::default());
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "bench".into());
    let args = serde_json::json!({ "pattern": r"fn needle_\d+_\d+" });

    let mut group = c.benchmark_group("file_search");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("4MiB_64_files", |b| {
        b.iter(|| {
            let out = runtime.block_on(tool.execute(args.clone(), &ctx)).unwrap();
            black_box(out);
        });
    });
    group.finish();

    let text = "é and some ascii text\n".repeat(1024 * 1024 / 23);
    let mut group = c.benchmark_group("truncate");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("1MiB_to_16KiB", |b| {
        b.iter(|| black_box(truncate_output(black_box(&text), 16 * 1024).len()));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
