//! The [`Hook`] trait: code of the embedding program that sees, and may change, what an
//! agent does at four points — before each model request, before and after each tool
//! call, and on every event of a run.
//!
//! Hooks are called in the order they were registered. Before a tool call the first
//! denial wins and rewrites chain (each hook sees the arguments the previous one left;
//! rewritten arguments are validated against the tool's schema again). After a tool
//! call, output rewrites chain too, and all of it happens before the runtime scrubs the
//! output, so no hook can bring back a secret the scrubber would remove.

use async_trait::async_trait;
use oxydra_tools::ToolOutput;
use oxydra_types::{CallId, Message, RuntimeEvent, SessionId, ToolSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::HookError;

/// Where a hook is called. In configuration files (`event` of a `[[hooks]]` entry) and
/// JSON it is spelled in snake_case, as [`HookPoint::as_str`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// Before each request to the model ([`Hook::before_model_request`]).
    BeforeModelRequest,
    /// Before each tool call runs ([`Hook::before_tool`]).
    BeforeTool,
    /// After a tool call produced output ([`Hook::after_tool`]).
    AfterTool,
    /// On every event of a run ([`Hook::on_event`]).
    OnEvent,
}

impl HookPoint {
    /// The snake_case name (`before_model_request`, `before_tool`, `after_tool`,
    /// `on_event`), as events and configuration files spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeModelRequest => "before_model_request",
            Self::BeforeTool => "before_tool",
            Self::AfterTool => "after_tool",
            Self::OnEvent => "on_event",
        }
    }
}

impl std::fmt::Display for HookPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The request about to be sent to the model, for
/// [`Hook::before_model_request`] to read or change.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequestEdit {
    /// The session.
    pub session_id: SessionId,
    /// The turn the request is for, from 1.
    pub turn: usize,
    /// The model asked.
    pub model: String,
    /// The conversation as it will be sent (system messages included). Changes apply
    /// to this request only; the stored session is not changed.
    pub messages: Vec<Message>,
    /// The tools offered to the model on this request.
    pub tools: Vec<ToolSchema>,
}

/// What [`Hook::before_model_request`] decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelRequestDecision {
    /// Send the request (as the hook left it).
    #[default]
    Continue,
    /// Do not send it: the run ends with a `hook_stopped` error carrying `reason`.
    Stop {
        /// Why, as the run's error message says it.
        reason: String,
    },
}

/// A hook stopped the run before a model request (see
/// [`ModelRequestDecision::Stop`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStop {
    /// The hook that stopped it.
    pub hook: String,
    /// Its reason.
    pub reason: String,
}

/// A tool call as a hook sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolHookCall {
    /// The session.
    pub session_id: SessionId,
    /// The call's id.
    pub call_id: CallId,
    /// The tool.
    pub tool_name: String,
    /// The arguments, validated against the tool's schema (before a call: as the
    /// previous hooks left them; after it: as the tool got them).
    pub arguments: Value,
}

/// What [`Hook::before_tool`] decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum BeforeToolDecision {
    /// Let the call go on (to the next hook, then to the rules, consent and the tool).
    #[default]
    Allow,
    /// Refuse the call: the model gets `reason` as the call's error result and the tool
    /// never runs.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Go on with these arguments instead. They are validated against the tool's
    /// schema again; invalid ones refuse the call with the validation error.
    Rewrite {
        /// The new arguments (a JSON object).
        arguments: Value,
    },
}

/// What [`Hook::after_tool`] decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AfterToolDecision {
    /// Keep the output as it is.
    #[default]
    Keep,
    /// Give the model `content` instead of the tool's output (it is scrubbed afterwards
    /// like any output). The output's parts (images, documents) are dropped with it.
    Replace {
        /// The new output text.
        content: String,
    },
}

/// Code that sees, and may change, what an agent does. Every method has a default that
/// changes nothing, so a hook implements only the points it cares about.
///
/// Register hooks with `AgentRuntimeBuilder::hook` (or
/// [`ToolExecutor::with_hooks`](crate::ToolExecutor::with_hooks) for the executor
/// alone). A method that returns an error fails closed before a tool call (the call is
/// denied, the reason says the hook failed) and open everywhere else (the failure is
/// reported in a `hook_decision` event and the run goes on).
#[async_trait]
pub trait Hook: Send + Sync {
    /// The hook's name, as events, spans and error messages name it.
    fn name(&self) -> &str {
        "hook"
    }

    /// Before each request to the model: read or change the messages and the tools of
    /// this request, or stop the run.
    async fn before_model_request(
        &self,
        _request: &mut ModelRequestEdit,
        _cancel: &CancellationToken,
    ) -> Result<ModelRequestDecision, HookError> {
        Ok(ModelRequestDecision::Continue)
    }

    /// Before a tool call runs (its arguments already valid): allow it, deny it with a
    /// reason the model sees, or rewrite its arguments.
    async fn before_tool(
        &self,
        _call: &ToolHookCall,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolDecision, HookError> {
        Ok(BeforeToolDecision::Allow)
    }

    /// After a tool call produced output (not after a failed one): keep the output or
    /// replace it, before it is scrubbed. The output is as the tool returned it, its
    /// parts (images, documents) included.
    async fn after_tool(
        &self,
        _call: &ToolHookCall,
        _output: &ToolOutput,
        _cancel: &CancellationToken,
    ) -> Result<AfterToolDecision, HookError> {
        Ok(AfterToolDecision::Keep)
    }

    /// Every event of a run, scrubbed, as the run's event sinks get it. It must not
    /// block: it is called from the run's task (spawn slow work).
    fn on_event(&self, _event: &RuntimeEvent) {}
}
