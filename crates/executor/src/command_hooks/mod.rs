//! Command hooks (feature `command-hooks`): [`Hook`]s that run a program at their hook
//! point, as the `[[hooks]]` tables of a configuration file declare them
//! ([`CommandHookConfig`]). Each command gets the event as JSON on stdin and answers
//! with a JSON decision on stdout ([`protocol`], docs/configuration.md, "Hooks").
//!
//! A command is confined by the run's sandbox ([`SandboxConfig::confine`]; what it
//! wrote to the workspace is applied once every process of the hook has ended, as the
//! sandbox's protected-paths policy allows), runs in a process group of its own that
//! is killed when it ends, times out or is cancelled (nothing it starts outlives it),
//! starts in a private launch directory, never the workspace ([`launch`]), with the
//! interpreter settings that load code from elsewhere removed
//! ([`oxydra_tools::neutralize_interpreter_env`]).
//!
//! Failing (a non-zero exit other than [`BLOCK_EXIT_CODE`], an answer that is not a
//! JSON decision object, a timeout): a `before_tool` hook denies the call (fail
//! closed, the reason says the hook failed); at the other points the failure is
//! reported and ignored (fail open). An `on_event` hook observes only: its commands
//! run one at a time, in event order, on a task of their own, and a failure is logged.
//!
//! Hooks start commands: take their configuration from trusted sources only.

mod config;
mod launch;
mod process;
mod protocol;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use oxydra_tools::{SandboxConfig, ToolOutput};
use oxydra_types::RuntimeEvent;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use config::{CommandHookConfig, DEFAULT_HOOK_TIMEOUT_SECS, MAX_HOOK_TIMEOUT_SECS};
pub use launch::{anchored_command, private_launch_dir, remove_private_launch_dir};
pub use process::MAX_HOOK_STDOUT_BYTES;
pub use protocol::BLOCK_EXIT_CODE;

use crate::error::HookError;
use crate::hook::{
    AfterToolDecision, BeforeToolDecision, Hook, HookPoint, ModelRequestDecision, ModelRequestEdit,
    ToolHookCall,
};
use process::{HookOutput, HookProcess};

/// Events an `on_event` hook may have waiting; past this, events are dropped (and
/// logged) rather than holding up the run.
const EVENT_QUEUE: usize = 256;

/// The event types an `on_event` hook without a matcher does not get (one command per
/// streamed piece of text would be far too many).
const STREAMED: [&str; 2] = ["text_delta", "reasoning_delta"];

/// Where the command hooks of a run (or of every run of a service) run and how they
/// are confined; it makes a [`CommandHook`] of each [`CommandHookConfig`].
///
/// ```
/// use std::sync::Arc;
/// use oxydra_executor::{CommandHookConfig, CommandHooks, Hook, HookPoint};
/// use oxydra_tools::SandboxConfig;
///
/// let workspace = std::env::temp_dir();
/// let guard = CommandHookConfig::new(HookPoint::BeforeTool, ["python3", "hooks/guard.py"]);
/// let hooks = CommandHooks::new(&workspace, SandboxConfig::default())
///     .anchored_in(vec![std::env::current_dir().unwrap()])
///     .hooks([guard]);
/// assert_eq!(hooks.len(), 1);
/// assert_eq!(hooks[0].name(), "python3");
/// // Register them: `ToolExecutor::with_hooks(HookChain::new(hooks))`, or one by one
/// // with the runtime's builder.
/// ```
#[derive(Debug, Clone)]
pub struct CommandHooks {
    workspace: PathBuf,
    /// The directory commands start in, or why there is none (every hook then fails:
    /// a `before_tool` hook denies).
    launch_dir: Result<PathBuf, String>,
    sandbox: SandboxConfig,
    /// Where a relative word of a command is looked up ([`anchored_command`]).
    lookup_dirs: Vec<PathBuf>,
}

impl CommandHooks {
    /// Hooks whose commands may change `workspace` as `sandbox` allows (its
    /// protected-paths policy rules on what they change there), started in the
    /// process's [private launch directory](private_launch_dir). If that directory
    /// cannot be created, every hook fails when it runs (a `before_tool` hook denies).
    pub fn new(workspace: impl Into<PathBuf>, sandbox: SandboxConfig) -> Self {
        Self {
            workspace: workspace.into(),
            launch_dir: private_launch_dir().map_err(|error| {
                format!("cannot create the private directory hooks start in: {error}")
            }),
            sandbox,
            lookup_dirs: Vec::new(),
        }
    }

    /// Starts the commands in `dir` instead. It should be empty, private to this user
    /// and never the workspace: a command may load code from its working directory.
    #[must_use]
    pub fn launch_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.launch_dir = Ok(dir.into());
        self
    }

    /// Makes each relative word of a command that names an existing path absolute
    /// against the first of `dirs` where it exists ([`anchored_command`]), so a
    /// command started in the launch directory finds its script.
    #[must_use]
    pub fn anchored_in(mut self, dirs: Vec<PathBuf>) -> Self {
        self.lookup_dirs = dirs;
        self
    }

    /// A hook running `config`'s command.
    pub fn hook(&self, config: CommandHookConfig) -> CommandHook {
        self.hook_at(config, Arc::new(self.place()))
    }

    /// A hook for each of `configs`, in order, ready to register.
    pub fn hooks(
        &self,
        configs: impl IntoIterator<Item = CommandHookConfig>,
    ) -> Vec<Arc<dyn Hook>> {
        let place = Arc::new(self.place());
        configs
            .into_iter()
            .map(|config| Arc::new(self.hook_at(config, Arc::clone(&place))) as Arc<dyn Hook>)
            .collect()
    }

    fn place(&self) -> Place {
        Place {
            workspace: self.workspace.clone(),
            launch_dir: self.launch_dir.clone(),
            sandbox: self.sandbox.clone(),
        }
    }

    fn hook_at(&self, mut config: CommandHookConfig, place: Arc<Place>) -> CommandHook {
        if let Some((program, args)) = config.command.split_first() {
            let (program, args) = anchored_command(program, args, &self.lookup_dirs);
            config.command = std::iter::once(program).chain(args).collect();
        }
        CommandHook {
            name: config.display_name(),
            config,
            place,
            events: OnceLock::new(),
            stop: CancellationToken::new(),
        }
    }
}

/// What every hook of a [`CommandHooks`] shares.
#[derive(Debug)]
struct Place {
    workspace: PathBuf,
    launch_dir: Result<PathBuf, String>,
    sandbox: SandboxConfig,
}

impl Place {
    fn cwd(&self) -> String {
        self.workspace.display().to_string()
    }
}

/// One command hook, ready to run (made by [`CommandHooks`]). It acts at its
/// [`CommandHookConfig::event`] only, for the tools or event types its matcher names.
#[derive(Debug)]
pub struct CommandHook {
    name: String,
    config: CommandHookConfig,
    place: Arc<Place>,
    /// The queue of an `on_event` hook's worker (started on the first event).
    events: OnceLock<mpsc::Sender<RuntimeEvent>>,
    /// Stops the `on_event` worker when the hook is dropped.
    stop: CancellationToken,
}

impl Drop for CommandHook {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl CommandHook {
    /// The configuration it runs (its command anchored).
    pub fn config(&self) -> &CommandHookConfig {
        &self.config
    }

    /// Runs the command with `input`, returning what it printed.
    async fn run(
        &self,
        input: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<HookOutput, HookError> {
        run_command(&self.config, &self.place, input, cancel).await
    }

    fn wants_event(&self, event: &RuntimeEvent) -> bool {
        let Ok(serde_json::Value::Object(json)) = serde_json::to_value(event) else {
            return false;
        };
        let kind = json
            .get("type")
            .and_then(|kind| kind.as_str())
            .unwrap_or("");
        match &self.config.matcher {
            Some(_) => self.config.matches(kind),
            None => !STREAMED.contains(&kind),
        }
    }
}

async fn run_command(
    config: &CommandHookConfig,
    place: &Place,
    input: &serde_json::Value,
    cancel: &CancellationToken,
) -> Result<HookOutput, HookError> {
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
        command: &config.command,
        workspace: &place.workspace,
        cwd,
        sandbox: &place.sandbox,
        timeout: config.timeout(),
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
        if self.config.event != HookPoint::BeforeModelRequest {
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
        if self.config.event != HookPoint::BeforeTool || !self.config.matches(&call.tool_name) {
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
        if self.config.event != HookPoint::AfterTool || !self.config.matches(&call.tool_name) {
            return Ok(AfterToolDecision::Keep);
        }
        let input = protocol::after_tool_input(call, output, &self.place.cwd());
        protocol::after_tool_decision(&self.run(&input, cancel).await?)
    }

    fn on_event(&self, event: &RuntimeEvent) {
        if self.config.event != HookPoint::OnEvent || !self.wants_event(event) {
            return;
        }
        let sender = self.events.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(EVENT_QUEUE);
            spawn_worker(
                self.config.clone(),
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
    config: CommandHookConfig,
    place: Arc<Place>,
    mut receiver: mpsc::Receiver<RuntimeEvent>,
    stop: CancellationToken,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("an on_event hook was called outside the async runtime; it does not run");
        return;
    };
    handle.spawn(async move {
        let name = config.display_name();
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                event = receiver.recv() => event,
            };
            let Some(event) = event else { return };
            let input = protocol::event_input(&event, &place.cwd());
            if let Err(error) = run_command(&config, &place, &input, &stop).await {
                tracing::warn!(hook = %name, %error, "an on_event hook failed; ignored");
            }
        }
    });
}
