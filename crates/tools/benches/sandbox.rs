#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! The cost of the command sandbox per command: `shell_exec` of `true` with no
//! sandbox (`full-access`), in `read-only` (the box: namespaces, a keeper and an init,
//! Landlock, seccomp, a cleared environment) and in `workspace-write` (the box plus the
//! workspace overlay, whose changes are applied after the command), and a command
//! that writes one file in `workspace-write` (the overlay's apply step on one change).

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
    let cases = [
        ("full_access", SandboxMode::FullAccess, "true"),
        ("read_only", SandboxMode::ReadOnly, "true"),
        ("workspace_write", SandboxMode::WorkspaceWrite, "true"),
        (
            "workspace_write_one_change",
            SandboxMode::WorkspaceWrite,
            "echo x > out.txt",
        ),
    ];
    let mut group = c.benchmark_group("shell_exec_true");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for (name, mode, command) in cases {
        let args = serde_json::json!({ "command": command });
        let config = BuiltinToolsConfig {
            sandbox: SandboxConfig {
                mode,
                ..SandboxConfig::default()
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
