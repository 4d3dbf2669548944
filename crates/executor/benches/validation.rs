#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Validating a typical call with the cached validator, against compiling the schema
//! on every call.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use oxydra_executor::{ToolExecutor, ToolExecutorConfig};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, SafetyTier, ToolCall, ToolSchema};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10000}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

struct FileRead;

#[async_trait]
impl Tool for FileRead {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("file_read", "Reads a file", schema())
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(""))
    }
}

fn bench(c: &mut Criterion) {
    let mut registry = ToolRegistry::new();
    registry.register(FileRead).unwrap();
    let executor = ToolExecutor::new(Arc::new(registry), vec![], ToolExecutorConfig::default());
    let call = ToolCall::new(
        CallId::from("c"),
        "file_read",
        r#"{"path":"src/lib.rs","offset":10,"limit":200}"#,
    );
    assert!(executor.validate_call(&call).is_ok());
    let mut group = c.benchmark_group("validation");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("cached_validator", |b| {
        b.iter(|| executor.validate_call(black_box(&call)).unwrap())
    });
    let schema = schema();
    group.bench_function("compile_per_call", |b| {
        b.iter(|| {
            let args = call.parsed_arguments().unwrap();
            let validator = jsonschema::validator_for(black_box(&schema)).unwrap();
            assert!(validator.is_valid(&args));
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
