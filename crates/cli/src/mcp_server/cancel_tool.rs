//! `cancel_agent_run`: the one coordinator tool the coordinator does not give its own
//! agents (an orchestrating agent watches its runs; an MCP client also stops them).
//! Same JSON as `POST /runs/{id}/cancel`: the run as it is afterwards, or the API's
//! error body.

use async_trait::async_trait;
use oxydra::coordinator::{ApiError, CoordinatorHandle};
use oxydra::tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra::types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};

/// Name of the run-cancelling tool.
pub const CANCEL_AGENT_RUN: &str = "cancel_agent_run";

/// `cancel_agent_run`: a pending run ends `cancelled` at once; a running one is
/// signalled and awaited for a bounded time. An ended run cannot be cancelled (the
/// `not_cancellable` error body says its status).
#[derive(Debug, Clone)]
pub struct CancelAgentRun(pub CoordinatorHandle);

#[async_trait]
impl Tool for CancelAgentRun {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            CANCEL_AGENT_RUN,
            "Cancel a run started with start_agent_run. A pending run ends `cancelled` at \
             once; a running one is stopped. Returns the run as it is afterwards; a run that \
             has already ended cannot be cancelled.",
            json!({
                "type": "object",
                "required": ["run_id"],
                "properties": {"run_id": {"type": "string"}},
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let run_id = args.get("run_id").and_then(Value::as_str).ok_or_else(|| {
            ToolError::InvalidArguments {
                message: "`run_id` must be a string".into(),
            }
        })?;
        let coordinator = self
            .0
            .upgrade()
            .ok_or_else(|| ToolError::Failed("the coordinator has shut down".into()))?;
        let run = coordinator
            .cancel_run(run_id)
            .await
            .map_err(|error| ToolError::Failed(ApiError::from(error).body.to_string()))?;
        let value =
            serde_json::to_value(run).map_err(|error| ToolError::Failed(error.to_string()))?;
        Ok(ToolOutput::from(value))
    }
}
