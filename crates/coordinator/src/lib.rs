//! The coordinator of Oxydra.
//!
//! `oxydra-coordinator` owns agent blueprints (`agent` and `deterministic`) with their
//! parameter schemas, validation of run parameters with structured errors an AI can
//! correct itself from, the SQLite-backed run queue and its bounded worker
//! pool, the HTTP API that lists agents and starts, inspects and cancels runs, and lists
//! and reverts what AI agent runs changed in the workspace ([`RunnerDeps::checkpoints`],
//! [`Coordinator::run_changes`], [`Coordinator::revert_run`]; docs/coordinator.md), and the same operations as tools: for orchestrating agents
//! ([`agent_tools`]), and those that steer runs already started ([`CancelAgentRun`],
//! [`approval_tools`]) for an MCP server of the coordinator or an agent of your own.
//!
//! A run whose tool call needs a person's consent, with a broker that defers
//! (`oxydra_executor::DeferAll`), waits: `waiting_approval`, its requests in
//! [`Run::pending_approvals`], no worker held. [`Coordinator::decide_approval`]
//! (`POST /runs/{id}/approvals/{approval_id}`) answers; once every request is decided
//! (or lapsed) the run is queued again and resumes on any worker with the decisions.
//!
//! ```
//! use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps};
//! use oxydra_tools::ToolRegistry;
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let blueprints = vec![BlueprintConfig::agent("researcher", "Research assistant", "You research.")];
//! let deps = RunnerDeps::new(ToolRegistry::new(), ".");
//! let coordinator = Coordinator::new(CoordinatorConfig::default(), blueprints, deps)
//!     .await
//!     .unwrap();
//!
//! let listing = coordinator.list_blueprints().await.unwrap();
//! assert_eq!(listing.agents[0].kind.as_str(), "agent");
//!
//! // Parameters are checked against the implicit {"prompt": string} schema.
//! let refused = coordinator.create_run("researcher", json!({"wrong": "field"})).await;
//! let Err(oxydra_coordinator::CoordinatorError::InvalidParameters(failure)) = refused else {
//!     panic!("expected a validation failure");
//! };
//! assert_eq!(failure.error, "parameter_validation_failed");
//! assert!(failure.validation_errors.iter().any(|e| e.message.contains("prompt")));
//! coordinator.shutdown().await;
//! # });
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_tools;
mod api_schemas;
mod approval_preview;
mod approval_row;
mod approval_sweep;
mod approvals;
mod blueprint;
mod claim_source;
mod claims;
#[cfg(feature = "client")]
pub mod client;
mod config;
mod config_check;
#[cfg(feature = "conformance")]
pub mod conformance;
mod constant_time;
mod coordinator;
mod error;
mod host_origin;
mod http;
mod local_source;
mod login_codes;
mod person;
mod person_view;
mod queue;
mod run;
mod run_change_types;
mod run_changes;
mod run_control_tools;
mod run_end;
mod run_ledger;
mod run_query;
mod run_row;
mod run_source;
mod run_tree;
mod run_usage;
mod runners;
mod scrub;
mod shell_words;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod template;
mod tree_meter;
mod validation;
mod worker;

pub use agent_tools::{
    AGENT_TOOL_NAMES, AgentRuns, GET_AGENT_RUN, GetAgentRun, LIST_AGENT_BLUEPRINTS,
    ListAgentBlueprints, MAX_WAIT_SECS, START_AGENT_RUN, StartAgentRun, agent_tool_rules,
    agent_tools,
};
pub use approval_preview::{ApprovalPreview, MAX_DIFF_SOURCE, MAX_DIFF_TEXT, preview};
pub use approval_row::{
    APPROVAL_COLUMN_COUNT, APPROVAL_COLUMNS, ApprovalRow, DecidedApproval, RecordedDecision,
    encode_decision,
};
pub use blueprint::{AgentSpec, Blueprint, BlueprintBody, BlueprintSummary, Step};
pub use claims::{ClaimState, ClaimedRun, SharedRunQueue};
pub use config::{
    BlueprintConfig, BlueprintKind, BlueprintLimits, CoordinatorConfig, DEFAULT_ADDR,
    DEFAULT_APPROVAL_SWEEP, DEFAULT_APPROVAL_TTL, DEFAULT_BODY_LIMIT, DEFAULT_BODY_READ_TIMEOUT,
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONCURRENT_RUNS,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_RUN_DEPTH, DEFAULT_MAX_RUNS_PER_ROOT, MAX_APPROVAL_SWEEP,
    MAX_APPROVAL_TTL, StepConfig,
};
pub use config_check::is_listen_address;
pub use coordinator::{AgentListing, Coordinator, CoordinatorHandle, RunCreated};
pub use error::{CoordinatorError, RunTreeBound, TemplateError};
pub use host_origin::{is_allowed_host_entry, is_allowed_origin_entry};
pub use http::{
    ApiError, ConnectionLimits, FD_RESERVE_FIXED, FD_RESERVE_PER_RUN, FdBudget, FdLimitRaise,
    JsonBody, fd_reserve, raise_fd_limit, serve, serve_bounded, shutdown_signal,
};
pub use login_codes::{
    LOGIN_CODE_TTL, LOGIN_FAILURE_WINDOW, LoginClock, LoginCodes, LoginRefusal, MAX_LOGIN_FAILURES,
};
/// The approval types of the runtime the run stores keep (re-exported so a backend
/// needs no dependency on the runtime).
pub use oxydra_runtime::{ApprovalDecision, EXPIRED_REASON, PendingApproval};
pub use oxydra_runtime::{ChangeKind, PathChange, TurnChanges};
pub use person::{ApprovalView, MAX_TRANSCRIPT_TEXT, RunPage, TranscriptMessage};
pub use run::{Run, RunError, RunLineage, RunStatus, RunTreeUsage};
pub use run_changes::{
    NotReverted, RevertConflict, RevertRequest, RunChanges, RunCheckpoints, RunReverted,
};
pub use run_control_tools::{
    CANCEL_AGENT_RUN, CancelAgentRun, DECIDE_APPROVAL, DecideApproval, LIST_PENDING_APPROVALS,
    ListPendingApprovals, RUN_CONTROL_TOOL_NAMES, approval_tools, run_control_tool_rules,
};
pub use run_ledger::RunLedger;
pub use run_query::{
    DEFAULT_RUN_PAGE, MAX_RUN_PAGE, MAX_WAITING_APPROVALS, RunCursor, RunQuery, WaitingApproval,
};
pub use run_row::{
    BlueprintRow, ClaimedRow, RUN_COLUMNS, RunRow, USAGE_COLUMNS, UsageColumns, encode_error,
    encode_value, parse_json,
};
pub use run_usage::RunUsage;
pub use runners::{
    AgentRunner, BlueprintRunner, DeterministicRunner, RunExecutor, RunOutcome, RunRequest,
    RunnerDeps,
};
pub use scrub::{scrub_error, scrub_value};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteRunStore;
pub use store::{RunStore, TreeReservation};
pub use template::{ArgsTemplate, shell_command_arg};
pub use validation::{
    MAX_REPORTED_ISSUES, ParameterValidationFailure, ParameterValidator, SchemaProblem,
    ValidationIssue, implicit_prompt_schema,
};
