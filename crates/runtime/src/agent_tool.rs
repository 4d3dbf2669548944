//! An agent offered to another as a tool: the supervisor's model calls it with a
//! task, it runs the task in a session of its own under its own budget, and its
//! answer is the call's result.

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{CallId, RuntimeEvent, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

use crate::error::RuntimeError;
use crate::events::EventSink;
use crate::runtime::AgentRuntime;

/// The property of the task in the tool's arguments.
const TASK: &str = "task";

/// An [`AgentRuntime`] as a tool (see [`AgentRuntime::as_tool`]).
///
/// Each call runs the task in a new session of the sub-agent with its own limits
/// (turns, cost, time), cancelled with the call. The result is the sub-agent's final
/// answer; its structured part holds the session id, turns and cost. When
/// [`events_to`](Self::events_to) names a sink, every event of the sub-agent's run
/// reaches it as [`RuntimeEvent::SubAgent`] under the calling tool call's id.
#[derive(Clone)]
pub struct AgentTool {
    runtime: AgentRuntime,
    name: String,
    description: String,
    tier: SafetyTier,
    events: Option<Arc<dyn EventSink>>,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name)
            .field("tier", &self.tier)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// This agent as a tool named `name` that another agent's model can hand tasks
    /// to; `description` tells that model what this agent is good at. Its tier is
    /// [`SafetyTier::SideEffecting`] (calls run one at a time) unless
    /// [`AgentTool::tier`] says otherwise.
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        AgentTool {
            runtime: self.clone(),
            name: name.into(),
            description: description.into(),
            tier: SafetyTier::SideEffecting,
            events: None,
        }
    }
}

impl AgentTool {
    /// The tier the calling agent's executor schedules calls with: `ReadOnly` lets
    /// several sub-agent calls of one turn run at once (only for agents whose tools
    /// are all read-only).
    #[must_use]
    pub fn tier(mut self, tier: SafetyTier) -> Self {
        self.tier = tier;
        self
    }

    /// Sends the sub-agent's events to `sink`, each wrapped in
    /// [`RuntimeEvent::SubAgent`] with the calling tool call's id (give it the
    /// supervisor's own event sink to see one nested stream).
    #[must_use]
    pub fn events_to(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }
}

/// Wraps each event of a sub-agent's run under the call that started it.
struct NestedEvents {
    call_id: CallId,
    agent: String,
    sink: Arc<dyn EventSink>,
}

impl EventSink for NestedEvents {
    fn emit(&self, event: RuntimeEvent) {
        self.sink.emit(RuntimeEvent::SubAgent {
            call_id: self.call_id.clone(),
            agent: self.agent.clone(),
            event: Box::new(event),
        });
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            self.name.clone(),
            self.description.clone(),
            json!({
                "type": "object",
                "properties": {
                    TASK: {
                        "type": "string",
                        "description": "The task, with everything the agent needs to know: it does not see this conversation."
                    }
                },
                "required": [TASK],
                "additionalProperties": false,
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        self.tier
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let task = args
            .get(TASK)
            .and_then(Value::as_str)
            .filter(|task| !task.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments {
                message: format!("`{}`: `{TASK}` must be a non-empty string", self.name),
            })?;
        let session = SessionId::generate();
        let sink: Arc<dyn EventSink> = match &self.events {
            Some(sink) => Arc::new(NestedEvents {
                call_id: ctx.call_id.clone(),
                agent: self.name.clone(),
                sink: Arc::clone(sink),
            }),
            None => Arc::new(crate::events::NoopEventSink),
        };
        let outcome = self
            .runtime
            .session(&session)
            .prompt(task)
            .cancel(&ctx.cancel)
            .events(sink)
            .await
            .map_err(|error| match error {
                RuntimeError::Cancelled => ToolError::Cancelled,
                other => ToolError::Failed(format!("the `{}` agent failed: {other}", self.name)),
            })?;
        Ok(ToolOutput::structured(
            outcome.final_text,
            json!({
                "session_id": outcome.session_id.as_str(),
                "turns": outcome.turns,
                "cost": outcome.cost,
                "output": outcome.output,
            }),
        ))
    }
}
