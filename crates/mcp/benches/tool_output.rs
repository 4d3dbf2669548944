#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Turning `tools/call` results into tool outputs (MB/s), and — when the test
//! servers are installed — the round trip of one `echo` call to server-everything.

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxydra_mcp::{McpManager, McpServerConfig, tool_output};
use oxydra_tools::ToolContext;
use rmcp::model::CallToolResult;
use tokio_util::sync::CancellationToken;

fn conversion(c: &mut Criterion) {
    let block = "lorem ipsum dolor sit amet ".repeat(40); // ~1 KiB
    let content: Vec<serde_json::Value> = (0..12)
        .map(|_| serde_json::json!({"type": "text", "text": block}))
        .collect();
    let result: CallToolResult = serde_json::from_value(serde_json::json!({
        "content": content,
        "structuredContent": {"rows": (0..50).collect::<Vec<_>>()}
    }))
    .unwrap();
    let bytes = (block.len() * 12) as u64;
    let mut group = c.benchmark_group("mcp_tool_output");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("12_text_blocks_12KiB", |b| {
        b.iter(|| tool_output("s", "t", result.clone()).unwrap())
    });
    group.finish();
}

fn echo_round_trip(c: &mut Criterion) {
    let servers = match std::env::var_os("OXYDRA_MCP_SERVERS_DIR") {
        Some(dir) => dir.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
    };
    let script = servers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.is_file() {
        eprintln!("mcp echo round trip: SKIPPED, run scripts/install-mcp-test-servers.sh");
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let config = McpServerConfig::stdio(
        "everything",
        "node",
        [script.to_string_lossy().into_owned(), "stdio".to_owned()],
    );
    let manager = rt.block_on(McpManager::start(vec![config])).unwrap();
    let dir = std::env::temp_dir();
    let ctx = ToolContext::new(&dir, CancellationToken::new(), "bench".into());
    let mut group = c.benchmark_group("mcp_stdio");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("echo_round_trip", |b| {
        b.to_async(&rt).iter(|| async {
            manager
                .call_tool(
                    "everything",
                    "echo",
                    serde_json::json!({"message": "x"}),
                    &ctx,
                )
                .await
                .unwrap()
        })
    });
    group.finish();
    rt.block_on(manager.shutdown());
}

criterion_group!(benches, conversion, echo_round_trip);
criterion_main!(benches);
