//! The error types of `oxydra-coordinator`: [`CoordinatorError`], and [`TemplateError`]
//! (why a step template is refused, reported at load as `CoordinatorError::InvalidStep`).

use serde_json::{Map, Value};
use thiserror::Error;

use crate::run::RunStatus;
use crate::validation::ParameterValidationFailure;

/// Which bound of a run tree refused a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunTreeBound {
    /// The tree is as deep as `max_run_depth` allows.
    Depth,
    /// The tree has started `max_runs_per_root` runs.
    RunsPerRoot,
    /// The tree spent its root's `max_cost`.
    Cost,
    /// The blueprint already runs in the tree and does not allow recursion.
    Recursion,
}

impl RunTreeBound {
    /// The stable snake_case name (`max_run_depth`, `max_runs_per_root`, `max_cost`,
    /// `recursion`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Depth => "max_run_depth",
            Self::RunsPerRoot => "max_runs_per_root",
            Self::Cost => "max_cost",
            Self::Recursion => "recursion",
        }
    }
}

/// What can go wrong while loading blueprints, storing runs or serving the API.
#[derive(Debug, Error)]
pub enum CoordinatorError {
    /// A run that a run tried to start is refused by a bound of its run tree.
    #[error("run tree of `{root_run_id}`: {message}")]
    RunTreeLimit {
        /// Which bound.
        bound: RunTreeBound,
        /// The root of the tree.
        root_run_id: String,
        /// What was refused, and why.
        message: String,
    },
    /// A coordinator setting is unusable (an empty auth token, no workers, …).
    #[error("coordinator config: {key}: {reason}")]
    InvalidConfig {
        /// The setting, as its key in `[serve]` (`max_concurrent_runs`,
        /// `allowed_hosts[1]`).
        key: String,
        /// What is wrong, and what was expected.
        reason: String,
    },
    /// A blueprint entry is unusable (a field that does not fit its type, …).
    #[error("blueprint `{name}`: {reason}")]
    InvalidBlueprint {
        /// The blueprint.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A blueprint's `parameters_schema` is not a valid Draft 7 schema.
    #[error("blueprint `{name}`: parameters_schema is not a valid Draft 7 schema{}: {message}",
        if location.is_empty() { String::new() } else { format!(" (at `{location}`)") })]
    InvalidSchema {
        /// The blueprint.
        name: String,
        /// What is wrong with the schema.
        message: String,
        /// Where in the schema, dot-joined (empty for the root).
        location: String,
    },
    /// A step's argument template is unusable (unknown or malformed placeholder).
    #[error("blueprint `{name}`, step {step} (`{tool}`): {reason}")]
    InvalidStep {
        /// The blueprint.
        name: String,
        /// The step, from 1.
        step: usize,
        /// The step's tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// Two blueprints share a name.
    #[error("two blueprints are named `{name}`")]
    DuplicateBlueprint {
        /// The name.
        name: String,
    },
    /// A blueprint names a tool the registry does not have.
    #[error(
        "blueprint `{blueprint}` uses tool `{tool}`, which is not registered (available: {available})"
    )]
    UnknownTool {
        /// The blueprint.
        blueprint: String,
        /// The tool.
        tool: String,
        /// Registered tool names, comma-separated.
        available: String,
    },
    /// A blueprint uses a Privileged tool it does not declare in `allow_privileged`.
    #[error(
        "blueprint `{blueprint}` uses the privileged tool `{tool}` without declaring it: \
         add `allow_privileged = [\"{tool}\"]` to its [[agents]] entry if it is meant to"
    )]
    UndeclaredPrivilegedTool {
        /// The blueprint.
        blueprint: String,
        /// The tool.
        tool: String,
    },
    /// An AI agent blueprint has no provider to run with.
    #[error("blueprint `{blueprint}`: {reason}")]
    ProviderUnavailable {
        /// The blueprint.
        blueprint: String,
        /// Why (no default provider, unknown provider name, no model).
        reason: String,
    },
    /// An AI agent blueprint's runs have a cost budget (its `max_cost`, or the default
    /// limits') but its model has no price: the budget could not be counted, so every
    /// run would fail. Refused when the blueprints are loaded.
    #[error(
        "blueprint `{blueprint}`: its runs have a cost budget (`max_cost`), but the price \
         of model `{model}` is unknown, so the budget cannot be counted and every run \
         would fail; give it a price in the configuration: [pricing.\"{model}\"] \
         input_per_mtok = …, output_per_mtok = … (US dollars per million tokens), or \
         remove `max_cost`"
    )]
    UnpricedModel {
        /// The blueprint.
        blueprint: String,
        /// The model without a price.
        model: String,
    },
    /// The run store's database failed.
    #[error("coordinator database ({backend}): {action}: {message}")]
    Storage {
        /// Which backend (`sqlite`, `postgres`).
        backend: &'static str,
        /// What the store was doing.
        action: &'static str,
        /// The backend's own message.
        message: String,
    },
    /// A stored row could not be read back.
    #[error("coordinator database: corrupt {what}: {detail}")]
    CorruptRow {
        /// What kind of row.
        what: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// No run store was given and this build has no built-in one.
    #[error(
        "no run store: this build of oxydra-coordinator has no SQLite backend (cargo feature `sqlite`); pass a store to Coordinator::with_store"
    )]
    NoRunStore,
    /// A blocking storage task died.
    #[error("coordinator database task failed: {0}")]
    StorageTask(String),
    /// No blueprint has this name.
    #[error("no agent named `{name}`")]
    AgentNotFound {
        /// The name asked for.
        name: String,
        /// The names that exist.
        available: Vec<String>,
    },
    /// No run has this id.
    #[error("no run with id `{run_id}`")]
    RunNotFound {
        /// The id asked for.
        run_id: String,
    },
    /// The parameters do not match the blueprint's schema.
    #[error("parameters for agent `{}` do not match its parameters_schema ({} problem(s))",
        .0.agent_name, .0.validation_errors.len())]
    InvalidParameters(Box<ParameterValidationFailure>),
    /// The run already finished, so it cannot be cancelled.
    #[error("run `{run_id}` is already {status}")]
    NotCancellable {
        /// The run.
        run_id: String,
        /// Its final status.
        status: RunStatus,
    },
    /// The run has no approval with this id.
    #[error("run `{run_id}` has no approval `{approval_id}`")]
    ApprovalNotFound {
        /// The run.
        run_id: String,
        /// The approval asked for.
        approval_id: String,
    },
    /// The approval was decided already: a decision is given once.
    #[error("approval `{approval_id}` of run `{run_id}` was decided already")]
    ApprovalAlreadyDecided {
        /// The run.
        run_id: String,
        /// The approval.
        approval_id: String,
    },
    /// The run does not wait for approval (it is pending, running or ended), so
    /// nothing can be decided for it.
    #[error("run `{run_id}` is {status}, not waiting for approval")]
    NotWaitingApproval {
        /// The run.
        run_id: String,
        /// Its status.
        status: RunStatus,
    },
    /// The coordinator is shutting down and accepts no new runs.
    #[error("the coordinator is shutting down")]
    ShuttingDown,
    /// The run has not ended (pending, running or waiting for approval): its changes
    /// are not reverted under it.
    #[error("run `{run_id}` is {status}: its changes can be reverted once it has ended")]
    RunActive {
        /// The run.
        run_id: String,
        /// Its status.
        status: RunStatus,
    },
    /// The run's conversation has no such turn.
    #[error("run `{run_id}` has no turn {turn} (it has {turns})")]
    TurnNotFound {
        /// The run.
        run_id: String,
        /// The turn asked for.
        turn: u64,
        /// How many turns it has.
        turns: u64,
    },
    /// Files the run changed were changed since by someone else: nothing was reverted
    /// (a forced revert overwrites them).
    #[error("run `{run_id}`: not reverted, changed since by someone else: {}",
        .conflicts.iter().map(|c| c.path.as_str()).collect::<Vec<_>>().join(", "))]
    RevertConflicts {
        /// The run.
        run_id: String,
        /// Each path, what the run left there, what is there now and the diff.
        conflicts: Vec<crate::run_change_types::RevertConflict>,
    },
    /// The revert stopped part way: some paths were put back, others could not be.
    /// What was put back is recorded, so it can be undone in turn.
    #[error("run `{run_id}`: the revert was partial: put back {}; NOT put back: {}",
        if .restored.is_empty() { "nothing".to_owned() } else { .restored.join(", ") },
        .failed.iter().map(|f| format!("{} ({})", f.path, f.error)).collect::<Vec<_>>().join(", "))]
    RevertPartial {
        /// The run.
        run_id: String,
        /// The paths put back.
        restored: Vec<String>,
        /// The paths not put back, with why.
        failed: Vec<crate::run_change_types::NotReverted>,
    },
    /// The run's session is held (by a run continuing it, or another revert):
    /// nothing was changed.
    #[error("run `{run_id}`: {message}; nothing was changed")]
    SessionBusy {
        /// The run.
        run_id: String,
        /// What holds it.
        message: String,
    },
    /// The run's changes were recorded in another workspace than this coordinator's
    /// (a worker of another workspace on a shared database): nothing was changed.
    #[error(
        "run `{run_id}` changed files in {recorded}, not in this server's workspace \
         {served}: revert it through a server of that workspace"
    )]
    WorkspaceMismatch {
        /// The run.
        run_id: String,
        /// Where its checkpoints were recorded.
        recorded: String,
        /// This coordinator's workspace.
        served: String,
    },
    /// This coordinator records no checkpoints (no session store, or none given for
    /// checkpoints), so runs' changes cannot be listed nor reverted.
    #[error(
        "this coordinator records no checkpoints of the workspace (it has no session store \
         with checkpoints), so runs' changes cannot be listed nor reverted"
    )]
    ChangesNotRecorded,
    /// A request of the HTTP client (`client::Client`, feature
    /// `client`) failed: the server answered with an error, or gave no usable answer.
    #[error("{server}: {message}{}", field.as_ref().map(|field| format!(" (field `{field}`)")).unwrap_or_default())]
    Client {
        /// The server's base URL.
        server: String,
        /// The HTTP status the server answered with; `None` when it gave no answer
        /// (unreachable, the connection dropped, the base URL is unusable).
        status: Option<u16>,
        /// The server's error code (its body's `error`: `run_not_found`,
        /// `invalid_query`, `unauthorized` …); without one, `http_error` (an error
        /// status without a JSON body), `unreachable`, `invalid_response` (a 2xx whose
        /// body is not what the API answers) or `invalid_url`.
        code: String,
        /// The server's message, or what went wrong.
        message: String,
        /// The request field the server named as wrong (its body's `field`: a query
        /// parameter, `Last-Event-ID`).
        field: Option<String>,
    },
    /// An I/O error while serving.
    #[error("{action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl CoordinatorError {
    /// The stable code of the error, what a client or a model can act on:
    /// `parameter_validation_failed`, `agent_not_found`, `run_not_found`,
    /// `run_not_cancellable`, `approval_not_found`, `approval_already_decided`,
    /// `run_not_waiting_approval`, `run_tree_limit`, `shutting_down`, `run_active`,
    /// `turn_not_found`, `revert_conflicts`, `revert_partial`, `session_busy`,
    /// `workspace_mismatch`, `changes_not_recorded`; `internal` for the
    /// rest (the config, the store, I/O: nothing the caller can correct).
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidParameters(_) => "parameter_validation_failed",
            Self::AgentNotFound { .. } => "agent_not_found",
            Self::RunNotFound { .. } => "run_not_found",
            Self::NotCancellable { .. } => "run_not_cancellable",
            Self::ApprovalNotFound { .. } => "approval_not_found",
            Self::ApprovalAlreadyDecided { .. } => "approval_already_decided",
            Self::NotWaitingApproval { .. } => "run_not_waiting_approval",
            Self::RunTreeLimit { .. } => "run_tree_limit",
            Self::ShuttingDown => "shutting_down",
            Self::RunActive { .. } => "run_active",
            Self::TurnNotFound { .. } => "turn_not_found",
            Self::RevertConflicts { .. } => "revert_conflicts",
            Self::RevertPartial { .. } => "revert_partial",
            Self::SessionBusy { .. } => "session_busy",
            Self::WorkspaceMismatch { .. } => "workspace_mismatch",
            Self::ChangesNotRecorded => "changes_not_recorded",
            _ => "internal",
        }
    }

    /// Whether the error is an `internal` one ([`code`](Self::code)), a failure worth
    /// logging where it is reported.
    pub fn is_internal(&self) -> bool {
        self.code() == "internal"
    }

    /// The JSON error body of the error: `{"error": <code>, "message": …}` plus its
    /// context fields (`agent_name` and `available_agents`, `run_id`, `approval_id`,
    /// `status`, `bound` and `root_run_id`, `turn` and `turns`, `conflicts`,
    /// `restored` and `failed`, `recorded` and `served`); for invalid parameters the
    /// `parameter_validation_failed` body with the schema
    /// ([`ParameterValidationFailure`]). The HTTP API answers it (with a status of its
    /// own, see `ApiError`) and the agent tools return it, so a model that starts runs
    /// reads what an HTTP client reads.
    pub fn body(&self) -> Value {
        if let Self::InvalidParameters(failure) = self
            && let Ok(body) = serde_json::to_value(failure.as_ref())
        {
            return body;
        }
        let mut body = Map::new();
        body.insert("error".to_owned(), self.code().into());
        body.insert("message".to_owned(), self.to_string().into());
        let context: Vec<(&str, Value)> = match self {
            Self::AgentNotFound { name, available } => vec![
                ("agent_name", name.as_str().into()),
                ("available_agents", available.clone().into()),
            ],
            Self::RunNotFound { run_id } => vec![("run_id", run_id.as_str().into())],
            Self::NotCancellable { run_id, status }
            | Self::NotWaitingApproval { run_id, status }
            | Self::RunActive { run_id, status } => {
                vec![
                    ("run_id", run_id.as_str().into()),
                    ("status", status.as_str().into()),
                ]
            }
            Self::ApprovalNotFound {
                run_id,
                approval_id,
            }
            | Self::ApprovalAlreadyDecided {
                run_id,
                approval_id,
            } => vec![
                ("run_id", run_id.as_str().into()),
                ("approval_id", approval_id.as_str().into()),
            ],
            Self::TurnNotFound {
                run_id,
                turn,
                turns,
            } => vec![
                ("run_id", run_id.as_str().into()),
                ("turn", (*turn).into()),
                ("turns", (*turns).into()),
            ],
            Self::RevertConflicts { run_id, conflicts } => vec![
                ("run_id", run_id.as_str().into()),
                (
                    "conflicts",
                    serde_json::to_value(conflicts).unwrap_or_default(),
                ),
            ],
            Self::RevertPartial {
                run_id,
                restored,
                failed,
            } => vec![
                ("run_id", run_id.as_str().into()),
                ("restored", restored.clone().into()),
                ("failed", serde_json::to_value(failed).unwrap_or_default()),
            ],
            Self::SessionBusy { run_id, .. } => vec![("run_id", run_id.as_str().into())],
            Self::WorkspaceMismatch {
                run_id,
                recorded,
                served,
            } => vec![
                ("run_id", run_id.as_str().into()),
                ("recorded", recorded.as_str().into()),
                ("served", served.as_str().into()),
            ],
            Self::RunTreeLimit {
                bound, root_run_id, ..
            } => vec![
                ("bound", bound.as_str().into()),
                ("root_run_id", root_run_id.as_str().into()),
            ],
            _ => Vec::new(),
        };
        for (key, value) in context {
            body.insert(key.to_owned(), value);
        }
        Value::Object(body)
    }
}

/// Why a step's argument template is refused (at load, see [`crate::ArgsTemplate`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TemplateError {
    /// `{{name}}` names no property of the parameters schema.
    #[error("placeholder `{{{{{name}}}}}` in args.{at} names no property of parameters_schema")]
    UnknownPlaceholder {
        /// The name.
        name: String,
        /// Where it occurs (`url`, `headers.x`, `list[1]`).
        at: String,
    },
    /// A placeholder in a shell command where its quoted value would not be one
    /// literal word.
    #[error(
        "placeholder `{{{{{name}}}}}` in args.{at} is {spot}, where its value would not \
         be one literal word: place it as a word of its own (it becomes the positional \
         parameter \"$N\" there, the value passed beside the command)"
    )]
    UnsafeShellPlaceholder {
        /// The name.
        name: String,
        /// The argument (`command`).
        at: String,
        /// Where it stands (`inside double quotes`, …).
        spot: &'static str,
    },
    /// A `shell_exec` step whose command has placeholders also sets the key that
    /// carries their values.
    #[error(
        "args.{key} is where a shell step's parameter values go; a step whose command has \
         placeholders may not set it"
    )]
    ReservedShellArgs {
        /// The key (`args`).
        key: &'static str,
    },
    /// A run's value for a shell step could run as code where bash evaluates it as
    /// arithmetic (an array subscript holding `$` or a backquote).
    #[error(
        "parameter `{name}` was refused for a shell command: a `[` followed by `$` or a \
         backquote runs code where bash evaluates the value as arithmetic"
    )]
    UnsafeShellValue {
        /// The parameter.
        name: String,
    },
    /// `{{` without a closing `}}`, or a name that is not an identifier.
    #[error("malformed placeholder in args.{at}: `{text}` (expected `{{{{name}}}}`)")]
    Malformed {
        /// The offending string.
        text: String,
        /// Where it occurs.
        at: String,
    },
}
