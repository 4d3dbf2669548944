//! The `[[hooks]]` of the configuration as [`Hook`]s of the runtime: each runs its
//! command (see [`super::hook_process`]) with the JSON of [`super::hook_protocol`],
//! started outside the workspace, its relative paths anchored ([`super::launch`]).
//!
//! Failing (a non-zero exit other than 2, bad JSON, a timeout): a `before_tool` hook
//! denies the call (fail closed, the reason says the hook failed); at the other points
//! the failure is reported and ignored (fail open). An `on_event` hook observes only:
//! its commands run one at a time, in event order, on a task of their own, and a
//! failure is logged.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use oxydra::executor::{
    AfterToolDecision, BeforeToolDecision, Hook, HookError, ModelRequestDecision, ModelRequestEdit,
    ToolHookCall,
};
use oxydra::tools::{SandboxConfig, ToolOutput};
use oxydra::types::RuntimeEvent;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::hook_process::HookProcess;
use super::hook_protocol as protocol;
use crate::config::Merged;
use crate::config::hooks::{HookEntry, HookEvent};

/// Events an `on_event` hook may have waiting; past this, events are dropped (and
/// logged) rather than holding up the run.
const EVENT_QUEUE: usize = 256;

/// The event types an `on_event` hook without a matcher does not get (one command per
/// streamed piece of text would be far too many).
const STREAMED: [&str; 2] = ["text_delta", "reasoning_delta"];

/// What every hook of a run shares: where commands run and how they are confined.
struct Place {
    workspace: PathBuf,
    /// The private directory commands start in (see [`super::launch`]), or why there
    /// is none (every hook then fails: a `before_tool` hook denies).
    launch_dir: Result<PathBuf, String>,
    sandbox: SandboxConfig,
    protected: oxydra::tools::ProtectedPaths,
}

impl Place {
    /// The sandbox a hook command runs in: the run's, whose protected-paths policy
    /// rules on what the hook changes in the workspace.
    fn sandbox(&self) -> SandboxConfig {
        SandboxConfig {
            protected: self.protected.clone(),
            ..self.sandbox.clone()
        }
    }

    fn cwd(&self) -> String {
        self.workspace.display().to_string()
    }
}

/// One `[[hooks]]` entry, ready to run.
pub struct CommandHook {
    name: String,
    entry: HookEntry,
    place: Arc<Place>,
    /// The queue of an `on_event` hook's worker (started on the first event).
    events: std::sync::OnceLock<mpsc::Sender<RuntimeEvent>>,
    /// Stops the `on_event` worker when the hook is dropped.
    stop: CancellationToken,
}

impl Drop for CommandHook {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The configured hooks of a run (or of every run of a service), in order. An
/// untrusted file's `[[hooks]]` never get here: the layering withholds them.
pub fn from_config<P>(effective: &Merged<P>) -> Vec<Arc<dyn Hook>> {
    if effective.hooks.is_empty() {
        return Vec::new();
    }
    let place = Arc::new(Place {
        workspace: effective.runtime.workspace.clone(),
        launch_dir: super::launch::launch_dir().map_err(|error| {
            format!("cannot create the private directory hooks start in: {error}")
        }),
        sandbox: effective.tools.sandbox.clone(),
        protected: effective.tools.protected.clone(),
    });
    effective
        .hooks
        .iter()
        .map(|entry| {
            let mut entry = entry.clone();
            entry.command =
                super::launch::hook_command(&entry.command, effective.config_file.as_deref());
            Arc::new(CommandHook {
                name: entry.display_name(),
                entry,
                place: Arc::clone(&place),
                events: std::sync::OnceLock::new(),
                stop: CancellationToken::new(),
            }) as Arc<dyn Hook>
        })
        .collect()
}

impl CommandHook {
    /// Runs the command with `input`, returning what it printed.
    async fn run(
        &self,
        input: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<super::hook_process::HookOutput, HookError> {
        run_command(&self.entry, &self.place, input, cancel).await
    }

    fn wants_event(&self, event: &RuntimeEvent) -> bool {
        let Ok(serde_json::Value::Object(json)) = serde_json::to_value(event) else {
            return false;
        };
        let kind = json
            .get("type")
            .and_then(|kind| kind.as_str())
            .unwrap_or("");
        match &self.entry.matcher {
            Some(_) => self.entry.matches(kind),
            None => !STREAMED.contains(&kind),
        }
    }
}

async fn run_command(
    entry: &HookEntry,
    place: &Place,
    input: &serde_json::Value,
    cancel: &CancellationToken,
) -> Result<super::hook_process::HookOutput, HookError> {
    let sandbox = place.sandbox();
    let cwd = place
        .launch_dir
        .as_deref()
        .map_err(|message| HookError::Failed {
            message: message.clone(),
        })?;
    let input = serde_json::to_vec(input).map_err(|error| HookError::Failed {
        message: format!("encoding the hook's input failed: {error}"),
    })?;
    HookProcess {
        command: &entry.command,
        workspace: &place.workspace,
        cwd,
        sandbox: &sandbox,
        timeout: entry.timeout(),
    }
    .run(&input, cancel)
    .await
}

#[async_trait]
impl Hook for CommandHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before_model_request(
        &self,
        request: &mut ModelRequestEdit,
        cancel: &CancellationToken,
    ) -> Result<ModelRequestDecision, HookError> {
        if self.entry.event != HookEvent::BeforeModelRequest {
            return Ok(ModelRequestDecision::Continue);
        }
        let input = protocol::model_request_input(request, &self.place.cwd());
        protocol::model_request_decision(&self.run(&input, cancel).await?)
    }

    async fn before_tool(
        &self,
        call: &ToolHookCall,
        cancel: &CancellationToken,
    ) -> Result<BeforeToolDecision, HookError> {
        if self.entry.event != HookEvent::BeforeTool || !self.entry.matches(&call.tool_name) {
            return Ok(BeforeToolDecision::Allow);
        }
        let input = protocol::before_tool_input(call, &self.place.cwd());
        protocol::before_tool_decision(&self.run(&input, cancel).await?)
    }

    async fn after_tool(
        &self,
        call: &ToolHookCall,
        output: &ToolOutput,
        cancel: &CancellationToken,
    ) -> Result<AfterToolDecision, HookError> {
        if self.entry.event != HookEvent::AfterTool || !self.entry.matches(&call.tool_name) {
            return Ok(AfterToolDecision::Keep);
        }
        let input = protocol::after_tool_input(call, output, &self.place.cwd());
        protocol::after_tool_decision(&self.run(&input, cancel).await?)
    }

    fn on_event(&self, event: &RuntimeEvent) {
        if self.entry.event != HookEvent::OnEvent || !self.wants_event(event) {
            return;
        }
        let sender = self.events.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(EVENT_QUEUE);
            spawn_worker(
                self.entry.clone(),
                Arc::clone(&self.place),
                receiver,
                self.stop.clone(),
            );
            sender
        });
        if sender.try_send(event.clone()).is_err() {
            tracing::warn!(hook = %self.name, "an on_event hook fell behind; an event was dropped");
        }
    }
}

/// Runs an `on_event` hook's command for each queued event, in order, until `stop`.
fn spawn_worker(
    entry: HookEntry,
    place: Arc<Place>,
    mut receiver: mpsc::Receiver<RuntimeEvent>,
    stop: CancellationToken,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("an on_event hook was called outside the async runtime; it does not run");
        return;
    };
    handle.spawn(async move {
        let name = entry.display_name();
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                event = receiver.recv() => event,
            };
            let Some(event) = event else { return };
            let input = protocol::event_input(&event, &place.cwd());
            if let Err(error) = run_command(&entry, &place, &input, &stop).await {
                tracing::warn!(hook = %name, %error, "an on_event hook failed; ignored");
            }
        }
    });
}
