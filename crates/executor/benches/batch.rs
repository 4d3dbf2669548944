#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Executor overhead on a batch of 16 no-op read-only calls.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_executor::{
    ExecutionContext, NoopEventSink, ToolExecutor, ToolExecutorConfig, ToolRule, ToolRuleKind,
};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, SafetyTier, SessionId, ToolCall, ToolSchema};
use serde_json::{Value, json};

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "noop",
            "Does nothing",
            json!({"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut registry = ToolRegistry::new();
    registry.register(Noop).unwrap();
    // never_dedupe: every iteration really runs all 16 calls.
    let executor = ToolExecutor::new(
        Arc::new(registry),
        vec![ToolRule::new("noop", ToolRuleKind::NeverDedupe)],
        ToolExecutorConfig::default(),
    );
    let calls: Vec<ToolCall> = (0..16)
        .map(|i| {
            ToolCall::new(
                CallId::from(format!("c{i}")),
                "noop",
                format!("{{\"i\":{i}}}"),
            )
        })
        .collect();
    let ctx = ExecutionContext::new(SessionId::generate(), ".");
    let mut group = c.benchmark_group("batch");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("16_noop_read_only", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut process = executor.new_process_state();
            let result = executor
                .execute_batch(black_box(&calls), &mut process, &ctx, &NoopEventSink)
                .await;
            assert!(result.all_succeeded());
        })
    });
    // Baseline: the same 16 tool futures awaited directly, without the executor, so the
    // executor's overhead is the difference between the two (on a loaded machine too).
    let tool: Arc<dyn Tool> = Arc::new(Noop);
    let tool_ctx = ToolContext::new(".", ctx.cancel.clone(), CallId::from("c"));
    group.bench_function("16_noop_direct_baseline", |b| {
        b.to_async(&runtime).iter(|| async {
            let futures = (0..16).map(|i| tool.execute(json!({ "i": i }), &tool_ctx));
            let outputs = futures::future::join_all(futures).await;
            assert!(outputs.iter().all(Result::is_ok));
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
