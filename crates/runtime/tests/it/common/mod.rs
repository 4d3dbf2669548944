//! Test tools and helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_provider::{ProviderRequest, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{
    AgentRuntime, AgentRuntimeBuilder, CollectingEventSink, RuntimeError, RuntimeEvent,
    RuntimeLimits, SessionOutcome,
};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use oxydra_types::{CallId, Message, MessageRole, SafetyTier, SessionId, ToolCall, ToolSchema};
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// `echo {text}`: read-only, `text` required.
pub struct EchoTool;

#[async_trait]
impl Tool for EchoTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "echo",
            "Echoes text",
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "echo: {}",
            args["text"].as_str().unwrap_or("")
        )))
    }
}

/// Shared state of [`ReadTool`] and [`WriteTool`]: calls in flight and the most seen.
#[derive(Default)]
pub struct Flight {
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    pub log: std::sync::Mutex<Vec<String>>,
}

impl Flight {
    fn enter(&self) -> usize {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        now
    }
    fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `read {key}`: read-only. Calls with keys "a" and "b" meet at a barrier (so they must
/// run at the same time), and "a" finishes only after "b" (so finish order differs from
/// request order).
pub struct ReadTool {
    pub flight: Arc<Flight>,
    pub barrier: Arc<Barrier>,
    pub b_done: Arc<Notify>,
}

#[async_trait]
impl Tool for ReadTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "read",
            "Reads a key",
            json!({"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = args["key"].as_str().unwrap_or("").to_owned();
        self.flight.enter();
        self.flight.log.lock().unwrap().push(format!("start {key}"));
        if key == "a" || key == "b" {
            let met = tokio::time::timeout(Duration::from_secs(1), self.barrier.wait()).await;
            if met.is_err() {
                self.flight.leave();
                return Err(ToolError::Failed(
                    "the parallel partner never arrived".into(),
                ));
            }
        }
        if key == "a" {
            self.b_done.notified().await;
        }
        if key == "b" {
            self.b_done.notify_one();
        }
        self.flight.log.lock().unwrap().push(format!("end {key}"));
        self.flight.leave();
        Ok(ToolOutput::text(format!("value of {key}")))
    }
}

/// `write {key}`: side-effecting; fails if anything else is in flight.
pub struct WriteTool {
    pub flight: Arc<Flight>,
}

#[async_trait]
impl Tool for WriteTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "write",
            "Writes a key",
            json!({"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = args["key"].as_str().unwrap_or("").to_owned();
        let now = self.flight.enter();
        self.flight.log.lock().unwrap().push(format!("write {key}"));
        tokio::task::yield_now().await;
        self.flight.leave();
        if now != 1 {
            return Err(ToolError::Failed(format!(
                "{now} calls in flight beside a write"
            )));
        }
        Ok(ToolOutput::text(format!("wrote {key}")))
    }
}

/// `wait`: read-only; tells `started`, then waits for `release` (forever unless notified).
pub struct WaitTool {
    pub started: Arc<Notify>,
    pub release: Arc<Notify>,
}

#[async_trait]
impl Tool for WaitTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("wait", "Waits", json!({"type":"object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.started.notify_one();
        self.release.notified().await;
        Ok(ToolOutput::text("released"))
    }
}

/// `config`: read-only; returns text holding a secret.
pub struct SecretTool;

pub const SECRET: &str = "sk-proj-Xq7RmT2vLp9sW4nZ8kJd3FhB6cYa1GeU";

#[async_trait]
impl Tool for SecretTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("config", "Shows the config", json!({"type":"object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "region: eu-west-1\napi_key: {SECRET}\nretries: 3"
        )))
    }
}

pub fn registry(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register_arc(tool).unwrap();
    }
    registry
}

pub fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall::new(CallId::from(id), name, args)
}

/// A builder with `provider`, model `test-model`, the temp dir as workspace and a
/// collecting event sink.
pub fn builder(
    provider: Arc<ScriptedProvider>,
    events: Arc<CollectingEventSink>,
) -> AgentRuntimeBuilder {
    AgentRuntime::builder()
        .provider(provider)
        .model("test-model")
        .workspace_root(std::env::temp_dir())
        .event_sink(events)
}

/// [`builder`] with the `echo` tool ([`EchoTool`]) registered.
pub fn echo_builder(
    provider: Arc<ScriptedProvider>,
    events: Arc<CollectingEventSink>,
) -> AgentRuntimeBuilder {
    builder(provider, events).tools(registry(vec![Arc::new(EchoTool)]))
}

/// Starts `prompt` on `session` in a task of its own, cancelled by `cancel`: the run a
/// test cancels while it waits.
pub fn spawn_prompt(
    runtime: &AgentRuntime,
    session: &SessionId,
    prompt: &str,
    cancel: &CancellationToken,
) -> JoinHandle<Result<SessionOutcome, RuntimeError>> {
    let runtime = runtime.clone();
    let session = session.clone();
    let prompt = prompt.to_owned();
    let cancel = cancel.clone();
    tokio::spawn(async move {
        runtime
            .session(&session)
            .prompt(prompt)
            .cancel(&cancel)
            .await
    })
}

pub fn limits() -> RuntimeLimits {
    RuntimeLimits::default()
}

/// Limits for a context-window test: a window of `window` tokens with `output` kept
/// for the answer, no safety buffer, and summaries at `trigger` of the usable window
/// (above 1.0: never).
pub fn window_limits(window: u32, output: u32, trigger: f64) -> RuntimeLimits {
    let mut custom = RuntimeLimits::default();
    custom.context_window = Some(window);
    custom.max_output_tokens = Some(output);
    custom.safety_buffer_tokens = 0;
    custom.summary_trigger_ratio = trigger;
    custom
}

pub fn scripted(turns: Vec<ScriptedTurn>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(turns))
}

/// The tool-result messages of a request, as (call id, content).
pub fn tool_results(request: &ProviderRequest) -> Vec<(String, String)> {
    request
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(|m| {
            (
                m.tool_call_id.as_ref().unwrap().to_string(),
                m.text().to_owned(),
            )
        })
        .collect()
}

/// Asserts no tool call in `messages` lacks its result and no result lacks its call.
pub fn assert_no_orphans(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::Tool => {
                let id = message.tool_call_id.as_ref().unwrap().to_string();
                let position = open.iter().position(|o| *o == id);
                assert!(
                    position.is_some(),
                    "tool result {id} without its call in {messages:#?}"
                );
                open.remove(position.unwrap());
            }
            _ => {
                assert!(
                    open.is_empty(),
                    "calls {open:?} without results in {messages:#?}"
                );
                open.extend(message.tool_calls.iter().map(|c| c.id.to_string()));
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} without results at the end");
}

/// Asserts every `tool_started` of `events` is closed by exactly one
/// `tool_completed`, `tool_failed` or `approval_requested` of the same call, and no
/// call is closed without having started.
pub fn assert_tool_events_closed(events: &[RuntimeEvent]) {
    let mut open: Vec<String> = Vec::new();
    for event in events {
        match event {
            RuntimeEvent::ToolStarted { call_id, .. } => {
                let id = call_id.to_string();
                assert!(!open.contains(&id), "{id} started twice in {events:#?}");
                open.push(id);
            }
            RuntimeEvent::ToolCompleted { call_id, .. }
            | RuntimeEvent::ToolFailed { call_id, .. }
            | RuntimeEvent::ApprovalRequested { call_id, .. } => {
                let id = call_id.to_string();
                let position = open.iter().position(|o| *o == id);
                assert!(
                    position.is_some(),
                    "{id} closed without an open start in {events:#?}"
                );
                open.remove(position.unwrap());
            }
            _ => {}
        }
    }
    assert!(
        open.is_empty(),
        "starts {open:?} never closed in {events:#?}"
    );
}
