//! The agent runtime of Oxydra.
//!
//! `oxydra-runtime` owns [`AgentRuntime`]: the turn loop that sends the context to a
//! provider, runs the tool calls the model returns through the executor, scrubs and
//! stores every result, and loops until a final answer — under turn, cost and time
//! budgets ([`RuntimeLimits`]), cancellable at every await. It also owns each
//! session's context window (token budgeting, history truncation that keeps tool calls
//! with their results, the rolling summary, retrieval snippets), the [`TurnState`]
//! machine, and progress and lifecycle events ([`EventSink`], [`RuntimeEventStream`]).
//!
//! A run is asked for in one of three ways: [`AgentRuntime::run`] (a prompt in a new
//! session), [`AgentRuntime::run_typed`] (the same, answered as a Rust value), and
//! [`AgentRuntime::session`], a [`RunRequest`] that sets the prompt, cancellation
//! token, event sink, tool choice and answer schema of one run, then is awaited or
//! streamed; a request without a prompt resumes the stored session (with
//! [`RunRequest::decide`], a run that ended waiting for a person's approval:
//! [`RunOutcome::AwaitingApproval`] from [`RunRequest::outcome`] and typed requests,
//! [`RuntimeError::AwaitingApproval`] from awaiting an untyped request; what a session
//! waits for is listed by [`AgentRuntime::pending_approvals`]).
//!
//! With memory, each side-effecting or privileged call's intent is stored before it
//! runs and its outcome after; a session loaded after a crash settles the calls that
//! had started without running them again, telling the model what is known of each
//! (docs/runtime.md, "Side effects across a crash").
//!
//! ```
//! use std::sync::Arc;
//! use oxydra_provider::{ScriptedProvider, ScriptedTurn};
//! use oxydra_runtime::{AgentRuntime, CancellationToken, CollectingEventSink, RuntimeEvent};
//! use oxydra_types::SessionId;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("Hello!")]));
//! let events = Arc::new(CollectingEventSink::new());
//! let runtime = AgentRuntime::builder()
//!     .provider(provider)
//!     .model("test-model")
//!     .system_prompt("You are terse.")
//!     .event_sink(events.clone())
//!     .build()
//!     .unwrap();
//! let session = SessionId::generate();
//! let cancel = CancellationToken::new();
//! let outcome = runtime
//!     .session(&session)
//!     .prompt("Hi")
//!     .cancel(&cancel)
//!     .await
//!     .unwrap();
//! assert_eq!(outcome.final_text, "Hello!");
//! assert_eq!(outcome.turns, 1);
//! assert!(matches!(events.events().last(), Some(RuntimeEvent::Final { .. })));
//! // The session continues where it stopped.
//! assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 2);
//! # });
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_tool;
mod approvals;
mod awaiting_calls;
mod budget;
mod builder;
mod call_ids;
mod checkpoint_changes;
mod checkpoint_diff;
mod checkpoint_secrets;
mod checkpoints;
mod checkpoints_error;
mod compacted;
mod context;
mod crash_point;
mod error;
pub mod eval;
mod event_scrub;
mod events;
mod gen_ai;
mod intent_journal;
mod interrupted_calls;
mod limits;
mod media_guard;
mod model_hooks;
mod part_scrub;
mod pending_approvals;
mod provider_call;
mod provider_retries;
pub mod replay;
mod retrieval_scope;
mod run_handle;
mod run_outcome;
mod run_request;
mod runtime;
mod runtime_inner;
mod session_lease;
mod session_load;
mod session_outcome;
mod session_state;
mod session_store;
mod small_model;
mod structured_output;
#[cfg(feature = "testing")]
pub mod testing;
mod tool_choice;
mod tool_dispatch;
mod tool_set;
mod turn_capture;
mod turn_loop;
mod turn_state;
mod typed_run_request;
mod usage_ledger;
mod used_budget;

pub use agent_tool::AgentTool;
pub use approvals::{ApprovalDecision, DENIED_REASON, EXPIRED_REASON, PendingApproval};
pub use budget::Budget;
pub use builder::{AgentRuntimeBuilder, DEFAULT_RETRIEVAL_TOP_K};
pub use checkpoint_changes::{ChangeKind, PATH_DIFF_BYTES, PathChange, TurnChanges};
pub use checkpoints::{Checkpoints, Reverted, conflicts};
pub use checkpoints_error::CheckpointsError;
pub use compacted::Compacted;
pub use context::{
    IMAGE_HEAD_BYTES, MAX_IMAGE_TOKENS, PDF_BYTES_PER_PAGE, PDF_PAGE_TOKENS, PIXELS_PER_TOKEN,
    part_tokens,
};
pub use error::RuntimeError;
pub use event_scrub::scrub_event;
pub use events::{CollectingEventSink, EventSink, NoopEventSink, RuntimeEvent, RuntimeEventStream};
pub use intent_journal::{MemoryIntentJournal, idempotency_key};
pub use interrupted_calls::{Interrupted, interrupted_call, interrupted_text};
pub use limits::{
    DEFAULT_MAX_TURNS, DEFAULT_SAFETY_BUFFER_TOKENS, DEFAULT_SUMMARY_TRIGGER_RATIO,
    DEFAULT_TURN_TIMEOUT, RuntimeLimits,
};
pub use oxydra_executor::{
    AfterToolDecision, BeforeToolDecision, Hook, HookChain, HookError, HookPoint, HookStop,
    ModelRequestDecision, ModelRequestEdit, ToolHookCall,
};
pub use retrieval_scope::RetrievalScope;
pub use run_handle::RunHandle;
pub use run_outcome::{RunOutcome, TypedOutcome};
pub use run_request::RunRequest;
pub use runtime::AgentRuntime;
pub use session_lease::DEFAULT_SESSION_WAIT;
pub use session_outcome::SessionOutcome;
pub use small_model::{SMALL_MODEL_TOOLS, SMALL_MODEL_WITHHELD_TOOLS, SmallModelDefaults};
pub use structured_output::{FINAL_ANSWER_TOOL, OutputSchema};
/// The cancellation token every run takes (re-exported from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use tool_choice::{FirstCall, ToolChoicePolicy, TurnInfo};
pub use tool_set::{IntoToolSet, ToolSet};
pub use turn_state::{TurnState, TurnTracker};
pub use typed_run_request::TypedRunRequest;
pub use usage_ledger::{LedgerError, UsageLedger};
pub use used_budget::UsedBudget;
