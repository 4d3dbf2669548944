//! Building the agent runtime of `run` and `chat` from the effective configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use oxydra::executor::{PermissionScope, ToolExecutorConfig, ToolRule, ToolRuleKind};
use oxydra::mcp::McpManager;
use oxydra::memory::{Memory, MemoryRetrieval};
use oxydra::runtime::replay::Replay;
use oxydra::runtime::{AgentRuntime, EventSink};
use oxydra::types::SessionId;

use crate::config::{ApproveMode, Effective};
use crate::consent::TerminalBroker;
use crate::error::CliError;
use crate::interrupt::Interrupts;
use crate::output::Renderer;
use crate::terminal_input::TerminalInput;

use super::database::{MemoryStore, newest, open_with};

/// The store `opening` opened, or its error; a task that ended without one (it
/// panicked or was cancelled) is named as a failure to open `db`.
async fn opened(
    opening: tokio::task::JoinHandle<Result<Arc<dyn MemoryStore>, CliError>>,
    db: &oxydra::storage::Database,
) -> Result<Arc<dyn MemoryStore>, CliError> {
    opening.await.unwrap_or_else(|error| {
        Err(CliError::Memory {
            path: db.shown_path(),
            message: format!("opening the database stopped: {error}"),
        })
    })
}

/// The system prompt when the configuration gives none.
const DEFAULT_SYSTEM_PROMPT: &str = "You are Oxydra, an agent that completes tasks in the \
user's workspace. Use the tools to inspect and change files (paths are relative to the \
workspace root) and answer concisely when the task is done.";

/// A ready runtime and the store behind it.
pub struct Agent {
    /// The runtime.
    pub runtime: AgentRuntime,
    /// The session store.
    pub memory: Arc<dyn MemoryStore>,
    /// The MCP servers whose tools the runtime has (stop them with [`Agent::stop`]).
    pub mcp: Option<McpManager>,
}

impl Agent {
    /// Stops the MCP servers; the runtime and the store need no stopping.
    pub async fn stop(self) {
        super::mcp::stop(self.mcp).await;
    }
}

/// Opens the store and builds the runtime; events go to `renderer`, consent answers
/// are read from `input`.
///
/// Ctrl-C (`interrupts`, which must be installed already) cancels the start of the MCP
/// servers: those started so far are killed and the error is of kind `cancelled`
/// (exit code 130), with the closing `error` event printed. Once they are started, a
/// forced exit (a second Ctrl-C) kills their process groups first.
///
/// With `ask_before_changes` (`chat`), the tools that change files ask for consent
/// too, as the privileged ones do.
pub async fn build(
    effective: &Effective,
    renderer: Arc<Renderer>,
    interrupts: &Interrupts,
    input: TerminalInput,
    ask_before_changes: bool,
) -> Result<Agent, CliError> {
    build_with(
        effective,
        renderer,
        interrupts,
        input,
        ask_before_changes,
        None,
    )
    .await
}

/// What `oxydra replay` changes in the agent [`build`] makes.
pub struct ReplaySetup<'a> {
    /// The replay whose recordings answer the tools' calls.
    pub replay: &'a Replay,
    /// Whether calls not recorded run (in the scratch workspace `effective` names).
    pub live: bool,
    /// The real workspace, whose project instructions the system prompt takes as a
    /// run there would (the tools work in `effective.workspace`, a scratch directory).
    pub instructions_from: PathBuf,
}

/// [`build`], for a replay when `replay` is given: every tool (built-in and MCP)
/// answered from the recordings, and no checkpoints (the replay changes no workspace
/// a person may undo).
pub async fn build_with(
    effective: &Effective,
    renderer: Arc<Renderer>,
    interrupts: &Interrupts,
    input: TerminalInput,
    ask_before_changes: bool,
    replay: Option<ReplaySetup<'_>>,
) -> Result<Agent, CliError> {
    // The store opens on a task of its own (a new SQLite file's switch to WAL and its
    // migrations run on a blocking thread) while the provider's client and the tools
    // are built: neither needs it, and on a new database the open was a third of the
    // time before the first request. Its error still comes first, as when it opened
    // first; nothing with an effect outside the process starts before it is open.
    let opening = {
        let (db, origin) = (effective.memory.db.clone(), effective.memory.origin.clone());
        let options = effective.memory.store_options();
        tokio::spawn(async move { open_with(&db, &origin, options).await })
    };
    // The open's first poll creates the database's directory and hands the file work
    // to a blocking thread: let it start now, before the set-up below holds this one.
    tokio::task::yield_now().await;
    let provider = super::provider::of_run(effective).await;
    let runtime_settings = &effective.runtime;
    let limits = runtime_settings.limits.clone();
    // A person answering in the terminal may take a while: as long as a run of `serve`
    // waits for a decision (`[serve] approval_ttl_secs`, a day by default). The time
    // does not count against `--turn-timeout` (the executor's clock stands still).
    let permission_timeout = match effective.approve() {
        ApproveMode::Ask => effective.serve.approval_ttl(),
        ApproveMode::Allow | ApproveMode::Deny => Duration::from_secs(60),
    };
    let executor_config = ToolExecutorConfig {
        permission_timeout,
        ..ToolExecutorConfig::default()
    };
    let broker = Arc::new(
        TerminalBroker::new(effective.approve(), Arc::clone(&renderer), input)
            .waiting_up_to(permission_timeout),
    );
    let mut tools_config = effective.tools.clone();
    if ask_before_changes {
        // `chat` asks before a protected write; `run` refuses it.
        let consent: Arc<dyn oxydra::tools::ProtectedWriteConsent> = broker.clone();
        tools_config.protected = tools_config.protected.with_consent(consent);
    }
    let mut tools = oxydra::tools::ToolRegistry::with_builtins(&tools_config);
    let registered = tools
        .register(oxydra::tools::UpdatePlan)
        .map_err(|error| CliError::Setup(error.to_string()));
    // The scrubber's built-in patterns are built by the first scrub, the user's prompt
    // on the way to the first request: built instead on a spare thread while this one
    // waits for the store (docs/performance.md, "The first scrub"). Not awaited: a
    // scrub that comes first waits for it and builds nothing twice.
    drop(tokio::task::spawn_blocking(oxydra::scrubbing::warm_up));
    let memory = opened(opening, &effective.memory.db).await?;
    let provider = provider?;
    registered?;
    let memory_handle: Arc<dyn Memory> = memory.clone();
    renderer.report_sandbox_support(crate::config::sandbox::SupportReport::default());
    let startup = interrupts.begin_turn();
    let servers = super::launch::mcp_servers(
        &effective.mcp_servers,
        effective.config_file.as_deref(),
        &effective.secret_handles,
    )?;
    let started = super::mcp::start_until(&servers, &mut tools, &startup).await;
    interrupts.end_turn();
    // A run that started is the one to print its closing event: print it here.
    let end_cancelled = |error: CliError| {
        if let CliError::Run { kind, message } = &error {
            renderer.ensure_ended(kind, message);
        }
        error
    };
    let mcp = started.map_err(end_cancelled)?;
    if let Some(mcp) = &mcp {
        interrupts.on_exit(mcp.killer());
    }
    if startup.is_cancelled() {
        // Ctrl-C came as the last server finished starting.
        super::mcp::stop(mcp).await;
        return Err(end_cancelled(super::mcp::cancelled_at_start()));
    }
    let tools = match &replay {
        Some(setup) => match setup.replay.wrap_tools(&tools, setup.live) {
            Ok(wrapped) => wrapped,
            Err(error) => {
                super::mcp::stop(mcp).await;
                return Err(CliError::Setup(error.to_string()));
            }
        },
        None => tools,
    };
    let tool_choice =
        match super::tool_choice::policy(runtime_settings.tool_choice.as_deref(), &tools) {
            Ok(policy) => policy,
            Err(error) => {
                super::mcp::stop(mcp).await;
                return Err(error);
            }
        };
    let instructions_from = replay
        .as_ref()
        .map_or(effective.workspace.as_path(), |setup| {
            setup.instructions_from.as_path()
        });
    let (system_prompt, holds_instructions) = system_prompt(effective, instructions_from).await;
    let rules = rules(effective, ask_before_changes.then_some(&tools));
    let sink: Arc<dyn EventSink> = renderer.clone();
    let mut builder = AgentRuntime::builder()
        .provider(provider)
        .model(effective.provider.model.clone())
        .tools(tools)
        .rules(rules)
        .executor_config(executor_config)
        .permission_broker(broker)
        .limits(limits)
        .pricing(effective.pricing_table())
        .memory(memory_handle)
        .session_wait(runtime_settings.session_wait())
        .system_prompt(system_prompt)
        // A continued session keeps the system prompt it was recorded with (an agent's,
        // when `serve` ran it): a prompt the configuration names wins, the built-in
        // default does not.
        .keep_session_system_prompt(runtime_settings.system_prompt.is_none())
        .workspace_root(effective.workspace.clone())
        .hooks(super::hooks::from_config(effective))
        .event_sink(sink);
    if replay.is_none() {
        builder = builder.checkpoints(memory.clone(), effective.checkpoints.clone());
    }
    for (name, value) in crate::config::searchable(&effective.held_secrets) {
        builder = builder.known_secret(name, value);
    }
    if !effective.secret_handles.is_empty() {
        builder = builder.secret_handles(effective.secret_handles.clone());
    }
    builder = builder.provenance_policy(effective.provenance.policy());
    if holds_instructions {
        // AGENTS.md is workspace text: `[provenance] hold = ["workspace"]` applies to it.
        builder = builder.system_prompt_source(oxydra::types::Source::Workspace);
    }
    if effective.memory.retrieval {
        let retrieval: Arc<dyn MemoryRetrieval> = memory.clone();
        builder = builder.retrieval(retrieval);
    }
    if let Some(policy) = tool_choice {
        builder = builder.tool_choice(policy);
    }
    match builder.build() {
        Ok(runtime) => {
            renderer.scrub_with(runtime.scrubber().clone());
            if let Some(note) = super::tool_choice::small_model_note(&runtime) {
                eprintln!("{note}");
            }
            Ok(Agent {
                runtime,
                memory,
                mcp,
            })
        }
        Err(error) => {
            super::mcp::stop(mcp).await;
            Err(CliError::Setup(error.to_string()))
        }
    }
}

/// The system prompt: the configured one (or the default), then the project
/// instructions (`AGENTS.md`, of `workspace`) as a block of their own unless they are
/// turned off, and whether it holds them (workspace text, for the provenance hold).
/// What was read, cut or refused is said on stderr.
async fn system_prompt(effective: &Effective, workspace: &Path) -> (String, bool) {
    let mut prompt = effective
        .runtime
        .system_prompt
        .clone()
        .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned());
    if effective.runtime.project_instructions == Some(false) {
        return (prompt, false);
    }
    let scrubber = oxydra::scrubbing::Scrubber::new();
    let scrubber = scrubber
        .clone()
        .with_known_secrets(crate::config::searchable(&effective.held_secrets))
        .unwrap_or(scrubber);
    let workspace = workspace.to_path_buf();
    let read =
        tokio::task::spawn_blocking(move || super::instructions::load(&workspace, &scrubber));
    let Ok(found) = read.await else {
        return (prompt, false);
    };
    for note in &found.notes {
        eprintln!("note: project instructions: {note}");
    }
    let Some(line) = found.summary_line() else {
        return (prompt, false);
    };
    eprintln!("{line}");
    prompt.push_str("\n\n");
    prompt.push_str(&found.prompt_block());
    (prompt, true)
}

/// The tools that change files without being privileged: `chat` asks before they run.
const CHANGING_TOOLS: [&str; 2] = ["file_write", "file_edit"];

/// The configured rules, and in `chat` (`asking` holds its tools) a consent rule for
/// each tool that changes files and is registered (a small local model gets no
/// `file_edit`: no rule names a tool that is not there).
fn rules(effective: &Effective, asking: Option<&oxydra::tools::ToolRegistry>) -> Vec<ToolRule> {
    let mut rules = effective.rules.clone();
    if let Some(tools) = asking {
        for tool in CHANGING_TOOLS
            .into_iter()
            .filter(|tool| tools.contains(tool))
        {
            rules.push(ToolRule::new(
                tool,
                ToolRuleKind::RequiresConsent {
                    scope: PermissionScope::Session,
                },
            ));
        }
    }
    rules
}

/// The session a run or chat starts on: `--session ID` (which must exist), the newest
/// stored one with `--continue`, else a new one.
pub async fn starting_session(
    memory: &Arc<dyn MemoryStore>,
    effective: &Effective,
    continue_latest: bool,
) -> Result<SessionId, CliError> {
    match &effective.session {
        Some(id) => require_session(memory, id, effective).await,
        None if continue_latest => {
            newest(memory.as_ref(), &effective.memory.db, &effective.workspace)
                .await?
                .ok_or_else(|| CliError::NothingToContinue {
                    db: effective.memory.db.shown_path(),
                    workspace: effective.workspace.clone(),
                })
        }
        None => Ok(SessionId::generate()),
    }
}

/// The stored session `id` names: its whole id or a unique prefix of it
/// ([`super::session_id::stored_session`]).
pub async fn require_session(
    memory: &Arc<dyn MemoryStore>,
    id: &str,
    effective: &Effective,
) -> Result<SessionId, CliError> {
    super::session_id::stored_session(memory.as_ref(), &effective.memory.db, id).await
}
