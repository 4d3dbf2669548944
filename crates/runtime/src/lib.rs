//! The agent runtime of Oxydra.
//!
//! `oxydra-runtime` owns [`AgentRuntime`]: the turn loop that sends the context to a
//! provider, runs the tool calls the model returns through the executor, scrubs and
//! stores every result, and loops until a final answer — under turn, cost and time
//! budgets ([`RuntimeLimits`]), cancellable at every await. It also owns context
//! budgeting with real token counts ([`ContextBudget`], [`token_counter`]), history
//! truncation that keeps tool calls with their results ([`history_window`]), the
//! rolling summary ([`rolling_summary`]), retrieval injection, the [`TurnState`]
//! machine, and progress and lifecycle events ([`EventSink`], [`RuntimeEventStream`]).
//!
//! ```
//! use std::sync::Arc;
//! use oxydra_provider::{ScriptedProvider, ScriptedTurn};
//! use oxydra_runtime::{AgentRuntime, CollectingEventSink};
//! use oxydra_types::{RuntimeEvent, SessionId};
//! use tokio_util::sync::CancellationToken;
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
//! let outcome = runtime
//!     .run_session(&session, "Hi", &CancellationToken::new())
//!     .await
//!     .unwrap();
//! assert_eq!(outcome.final_text, "Hello!");
//! assert_eq!(outcome.turns, 1);
//! assert!(matches!(events.events().last(), Some(RuntimeEvent::Final { .. })));
//! // The session continues where it stopped.
//! assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 2);
//! # });
//! ```

mod builder;
mod call_ids;
pub mod context_budget;
mod error;
mod event_scrub;
mod events;
pub mod history_window;
mod limits;
mod prepared_context;
mod provider_call;
pub mod retrieval_injection;
pub mod rolling_summary;
mod runtime;
mod session_lease;
mod session_state;
mod session_store;
mod token_cache;
pub mod token_counter;
mod tool_dispatch;
mod turn_loop;
mod turn_state;

pub use builder::{AgentRuntimeBuilder, DEFAULT_RETRIEVAL_TOP_K};
pub use context_budget::{ContextBudget, ContextReport};
pub use error::RuntimeError;
pub use event_scrub::scrub_event;
pub use events::{CollectingEventSink, EventSink, NoopEventSink, RuntimeEventStream};
pub use limits::RuntimeLimits;
pub use runtime::{AgentRuntime, RetrievalScope, SessionOutcome};
pub use session_lease::DEFAULT_SESSION_WAIT;
/// The cancellation token every run takes (re-exported from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use turn_state::{TurnState, TurnTracker};
