//! The coordinator as tools for AI agents that orchestrate others:
//! `list_agent_blueprints`, `start_agent_run` and `get_agent_run`. They return the
//! same JSON as the HTTP API; a refused run's error is the API's error body (for
//! invalid parameters, the `parameter_validation_failed` body with the
//! schema), so the model can correct its parameters and retry.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oxydra_executor::{ToolRule, ToolRuleKind};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};

use crate::error::CoordinatorError;

/// Name of the listing tool.
pub const LIST_AGENT_BLUEPRINTS: &str = "list_agent_blueprints";
/// Name of the run-starting tool.
pub const START_AGENT_RUN: &str = "start_agent_run";
/// Name of the run-inspecting tool.
pub const GET_AGENT_RUN: &str = "get_agent_run";
/// The names of all three tools.
pub const AGENT_TOOL_NAMES: [&str; 3] = [LIST_AGENT_BLUEPRINTS, START_AGENT_RUN, GET_AGENT_RUN];

/// Longest `get_agent_run` waits for a run to end, in seconds.
pub const MAX_WAIT_SECS: u64 = 60;

/// What the agent tools ask of a coordinator, each answer the HTTP API's JSON. A
/// [`CoordinatorHandle`](crate::CoordinatorHandle) is one (the tools hold it, not the
/// coordinator, so tools registered in its own runners do not keep it alive); the
/// trait keeps this module below the coordinator it serves.
#[async_trait]
pub trait AgentRuns: Send + Sync + std::fmt::Debug {
    /// `GET /agents`: `{"agents": [...]}`.
    async fn list_blueprints(&self) -> Result<Value, ToolError>;
    /// `POST /runs`: validates and starts a run; `{"run_id", "status"}`.
    async fn create_run(&self, agent_name: &str, parameters: Value) -> Result<Value, ToolError>;
    /// `GET /runs/{id}`, after waiting up to `wait` for the run to end.
    async fn wait_for_run(&self, run_id: &str, wait: Duration) -> Result<Value, ToolError>;
}

/// The three tools, bound to `api` (a [`CoordinatorHandle`](crate::CoordinatorHandle)).
pub fn agent_tools(api: &(impl AgentRuns + Clone + 'static)) -> Vec<Arc<dyn Tool>> {
    let api: Arc<dyn AgentRuns> = Arc::new(api.clone());
    vec![
        Arc::new(ListAgentBlueprints(Arc::clone(&api))),
        Arc::new(StartAgentRun(Arc::clone(&api))),
        Arc::new(GetAgentRun(api)),
    ]
}

/// The rules the agent tools need in any executor that runs them: `get_agent_run` is
/// read-only, but its answer changes as the run progresses, so it is never deduped
/// (a model polling a run would otherwise get its first `pending` answer back for the
/// whole dedupe window). The coordinator's own runners add these; add them too when
/// registering [`agent_tools`] in a runtime of your own.
pub fn agent_tool_rules() -> Vec<ToolRule> {
    vec![ToolRule::new(GET_AGENT_RUN, ToolRuleKind::NeverDedupe)]
}

/// The API's JSON error body ([`CoordinatorError::body`]) as the tool's error.
pub(crate) fn api_error(error: CoordinatorError) -> ToolError {
    if error.is_internal() {
        tracing::error!(error = %error, "coordinator request failed");
    }
    ToolError::Failed(error.body().to_string())
}

fn json_output(value: Value) -> ToolOutput {
    ToolOutput::from(value)
}

/// An answer of the API as JSON.
pub(crate) fn to_value(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|error| ToolError::Failed(error.to_string()))
}

/// `list_agent_blueprints`: `{"agents": [...]}` as `GET /agents` returns it.
#[derive(Debug, Clone)]
pub struct ListAgentBlueprints(pub Arc<dyn AgentRuns>);

#[async_trait]
impl Tool for ListAgentBlueprints {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            LIST_AGENT_BLUEPRINTS,
            "List the agent blueprints you can start with start_agent_run. Each has a name, a \
             `type` and a description. `agent` blueprints are AI agents and take parameters \
             {\"prompt\": \"<task>\"}; `deterministic` blueprints take parameters matching \
             their `parameters_schema` (JSON Schema draft 7).",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(json_output(self.0.list_blueprints().await?))
    }
}

/// `start_agent_run`: validates and starts a run; `{"run_id", "status"}`.
#[derive(Debug, Clone)]
pub struct StartAgentRun(pub Arc<dyn AgentRuns>);

#[async_trait]
impl Tool for StartAgentRun {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            START_AGENT_RUN,
            "Start a run of an agent blueprint (see list_agent_blueprints). Returns \
             {\"run_id\", \"status\"}; follow it with get_agent_run. Parameters are validated \
             against the blueprint's schema: on failure you get `parameter_validation_failed` \
             with each error's `path`, `message` and `schema_path` and the \
             `parameters_schema` — fix the parameters and call again.",
            json!({
                "type": "object",
                "required": ["agent_name", "parameters"],
                "properties": {
                    "agent_name": {"type": "string", "description": "The blueprint's name."},
                    "parameters": {"type": "object", "description": "The run's parameters."}
                },
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let agent_name = args
            .get("agent_name")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments {
                message: "`agent_name` must be a string".into(),
            })?;
        let parameters = args.get("parameters").cloned().unwrap_or_else(|| json!({}));
        Ok(json_output(
            self.0.create_run(agent_name, parameters).await?,
        ))
    }
}

/// `get_agent_run`: the run as `GET /runs/{id}` returns it, optionally after waiting
/// for it to end. Never deduped (see [`agent_tool_rules`]).
#[derive(Debug, Clone)]
pub struct GetAgentRun(pub Arc<dyn AgentRuns>);

#[async_trait]
impl Tool for GetAgentRun {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            GET_AGENT_RUN,
            "Get a run started with start_agent_run: its status (pending, running, \
             waiting_approval, completed, failed, cancelled) and its result or error. \
             `wait_secs` (at most 60) waits for the run to end (or to wait for a person's \
             approval) first.",
            json!({
                "type": "object",
                "required": ["run_id"],
                "properties": {
                    "run_id": {"type": "string"},
                    "wait_secs": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS}
                },
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let run_id = args.get("run_id").and_then(Value::as_str).ok_or_else(|| {
            ToolError::InvalidArguments {
                message: "`run_id` must be a string".into(),
            }
        })?;
        let wait = args
            .get("wait_secs")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_WAIT_SECS);
        let run = tokio::select! {
            run = self.0.wait_for_run(run_id, Duration::from_secs(wait)) => run,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }?;
        Ok(json_output(run))
    }
}
