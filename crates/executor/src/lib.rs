//! The tool executor of Oxydra.
//!
//! `oxydra-executor` owns [`ToolExecutor`]: it validates a call's raw arguments against
//! the tool's JSON Schema (with validators compiled once per tool and cached),
//! enforces the [tool rules](ToolRuleKind) (max calls, exclusive groups, start and exit
//! constraints, ordering, continue/exit loop, cooldown, consent), dedupes repeated
//! calls, asks a [`PermissionBroker`] for consent (which may defer it to a person:
//! [`PermissionDecision::Defer`], decided later with [`ToolExecutor::decide_call`]), applies per-call timeouts and
//! cancellation, and runs contiguous read-only calls in parallel while side-effecting
//! and privileged calls run alone — returning results in request order. No failure
//! aborts a batch: each becomes a [`ToolExecutionError`] the model reads as
//! `Tool execution failed: …`. [`Hook`]s registered with [`ToolExecutor::with_hooks`]
//! may deny a call, rewrite its arguments (validated again) or rewrite its output.
//! An [`IntentJournal`] in the [`ExecutionContext`] records the intent of each call
//! that is not read-only before it runs (a call whose intent cannot be stored does not
//! run) and its outcome after, and hands the call's idempotency key to the tool.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use oxydra_executor::{
//!     ExecutionContext, NoopEventSink, ToolExecutor, ToolExecutorConfig, ToolRule, ToolRuleKind,
//! };
//! use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
//! use oxydra_types::{CallId, SafetyTier, SessionId, ToolCall, ToolSchema};
//! use serde_json::{json, Value};
//!
//! struct Echo;
//!
//! #[async_trait]
//! impl Tool for Echo {
//!     fn schema(&self) -> ToolSchema {
//!         ToolSchema::new("echo", "Echoes `text`", json!({
//!             "type": "object",
//!             "properties": {"text": {"type": "string"}},
//!             "required": ["text"]
//!         }))
//!     }
//!     fn safety_tier(&self) -> SafetyTier {
//!         SafetyTier::ReadOnly
//!     }
//!     async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut registry = ToolRegistry::new();
//! registry.register(Echo).unwrap();
//! let rules = vec![ToolRule::new("echo", ToolRuleKind::MaxCalls(2))];
//! let executor = ToolExecutor::new(Arc::new(registry), rules, ToolExecutorConfig::default());
//! let ctx = ExecutionContext::new(SessionId::generate(), ".");
//! let mut process = executor.new_process_state();
//!
//! let calls = vec![
//!     ToolCall::new(CallId::from("1"), "echo", r#"{"text":"hi"}"#),
//!     ToolCall::new(CallId::from("2"), "echo", r#"{"txt":"hi"}"#),
//!     ToolCall::new(CallId::from("3"), "missing", "{}"),
//! ];
//! let result = executor.execute_batch(&calls, &mut process, &ctx, &NoopEventSink).await;
//! assert_eq!(result.records[0].content_for_model(), "hi");
//! assert!(result.records[1].content_for_model().contains("at $.text"));
//! assert!(result.records[2].content_for_model().contains("available tools: echo"));
//! # });
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    feature = "command-hooks",
    doc = r##"
With the `command-hooks` feature, [`CommandHooks`] makes hooks of programs, as the
`[[hooks]]` tables of a configuration file declare them ([`CommandHookConfig`]): each
gets the event as JSON on stdin and prints its decision as a JSON object, confined by
the run's sandbox, started in a private directory outside the workspace, killed with
everything it started when it ends, times out or the run is cancelled.

```
use oxydra_executor::{BeforeToolDecision, CommandHookConfig, CommandHooks, Hook, HookPoint, ToolHookCall};
use oxydra_tools::{SandboxConfig, SandboxMode};
use oxydra_types::{CallId, SessionId};
use tokio_util::sync::CancellationToken;

# tokio::runtime::Runtime::new().unwrap().block_on(async {
let workspace = std::env::temp_dir();
let sandbox = SandboxConfig { mode: SandboxMode::FullAccess, ..SandboxConfig::default() };
let no_rm = CommandHookConfig::new(
    HookPoint::BeforeTool,
    ["sh", "-c", r#"grep -q '"rm ' && echo '{"decision":"block","reason":"no rm"}'; exit 0"#],
);
let hook = CommandHooks::new(&workspace, sandbox).hook(no_rm);
let call = |command: &str| ToolHookCall {
    session_id: SessionId::generate(),
    call_id: CallId::from("1"),
    tool_name: "shell_exec".into(),
    arguments: serde_json::json!({"command": command}),
};
let cancel = CancellationToken::new();
assert_eq!(
    hook.before_tool(&call("rm -rf /"), &cancel).await.unwrap(),
    BeforeToolDecision::Deny { reason: "no rm".into() }
);
assert_eq!(hook.before_tool(&call("ls"), &cancel).await.unwrap(), BeforeToolDecision::Allow);
# });
```
"##
)]

mod admission;
mod batch;
mod batch_planner;
mod call_verdicts;
#[cfg(feature = "command-hooks")]
mod command_hooks;
mod config;
mod consent;
mod consent_clock;
mod context;
mod dedupe;
mod error;
mod events;
mod executor;
mod hook;
mod hook_chain;
mod intent_journal;
mod invoke;
mod permission_scope;
mod provenance;
mod record;
mod rules;
mod schema_violation;
mod secret_handles;
mod tool_hooks;
mod validation;

pub use call_verdicts::CallVerdict;
#[cfg(feature = "command-hooks")]
pub use command_hooks::{
    BLOCK_EXIT_CODE, CommandHook, CommandHookConfig, CommandHooks, DEFAULT_HOOK_TIMEOUT_SECS,
    MAX_HOOK_STDOUT_BYTES, MAX_HOOK_TIMEOUT_SECS, anchored_command, private_launch_dir,
    remove_private_launch_dir,
};
pub use config::ToolExecutorConfig;
pub use consent::{
    AlwaysApprove, AlwaysDeny, DeferAll, PermissionBroker, PermissionDecision, PermissionRequest,
    StaticBroker,
};
pub use consent_clock::{ClockPause, ConsentClock};
pub use context::{ExecutionContext, SessionRunId};
pub use dedupe::canonical_key;
pub use error::{HookError, ToolExecutionError, ToolRuleViolation};
pub use events::{CollectingEventSink, NoopEventSink, ToolEventSink};
pub use executor::{ExecutorStateStats, RUN_STATE_TTL, ToolExecutor};
pub use hook::{
    AfterToolDecision, BeforeToolDecision, Hook, HookPoint, HookStop, ModelRequestDecision,
    ModelRequestEdit, ToolHookCall,
};
pub use hook_chain::HookChain;
pub use intent_journal::{CallIntent, IntentJournal};
pub use permission_scope::PermissionScope;
pub use provenance::{ProvenanceHold, ProvenanceLedger, ProvenancePolicy};
pub use record::{MAX_ERROR_BYTES, REUSED_OUTPUT_MARKER, ToolBatchResult, ToolCallRecord};
pub use rules::kinds::{RULE_KINDS, RuleKindSpec, RuleScope};
pub use rules::process_state::{ExecutionPhase, ProcessToolState, ToolExecution};
pub use rules::rule::ToolRule;
pub use rules::rule_kind::ToolRuleKind;
pub use schema_violation::SchemaViolation;
pub use secret_handles::{SecretHandle, SecretHandles};
pub use validation::{
    CheckedArguments, HEARTBEAT_ARGUMENT, SchemaCache, json_kind, strip_heartbeat,
};
