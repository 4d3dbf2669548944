#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! The cost of the command sandbox per command: `shell_exec` of `true` with no
//! sandbox (`full-access`), in `workspace-write` (Landlock + the network filter), and
//! in `workspace-write` with `.git` read-only (plus a user and mount namespace with a
//! read-only bind mount).

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_tools::builtin::ShellExec;
use oxydra_tools::{BuiltinToolsConfig, SandboxConfig, SandboxMode, Tool, ToolContext};
use tokio_util::sync::CancellationToken;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "bench".into());
    let args = serde_json::json!({ "command": "true" });
    let cases = [
        ("full_access", SandboxMode::FullAccess, Vec::new()),
        ("workspace_write", SandboxMode::WorkspaceWrite, Vec::new()),
        (
            "workspace_write_git_read_only",
            SandboxMode::WorkspaceWrite,
            vec![".git".into()],
        ),
    ];
    let mut group = c.benchmark_group("shell_exec_true");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for (name, mode, read_only) in cases {
        let config = BuiltinToolsConfig {
            sandbox: SandboxConfig {
                mode,
                network: false,
                read_only,
            },
            ..BuiltinToolsConfig::default()
        };
        let tool = ShellExec::new(&config);
        group.bench_function(name, |b| {
            b.iter(|| {
                let out = runtime.block_on(tool.execute(args.clone(), &ctx)).unwrap();
                assert!(out.content.starts_with("exit code: 0"), "{}", out.content);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
