//! What the coordinator's benches share: an `echo` tool for deterministic blueprints
//! and the runtime they serve on.

use async_trait::async_trait;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};

/// Echoes its `text` argument.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "echo",
            "Echoes `text`",
            json!({"type": "object",
            "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
    }
}

/// A registry holding [`Echo`].
pub fn echo_tools() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.register(Echo).unwrap();
    tools
}

/// The two-thread runtime the server and its client run on (the machine's size).
pub fn bench_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
