//! The data model every Oxydra crate speaks.
//!
//! `oxydra-types` owns the plain data that crosses crate boundaries: conversation
//! [`Message`]s and their [`MessageRole`], the [`ToolCall`]s a model asks for (with the
//! raw argument string exactly as received), the [`ToolSchema`] a tool advertises, its
//! [`SafetyTier`], token [`Usage`], the [`StreamItem`]s a provider stream yields, the
//! runtime's [`RuntimeProgressEvent`]s and the [`RuntimeEvent`]s the CLI prints as JSONL,
//! and the typed ids ([`SessionId`], [`RunId`], [`CallId`]).
//!
//! It depends on serde alone (plus `serde_json` for JSON values and `thiserror` for its
//! one error type), so every other layer can use it without pulling in a runtime.
//!
//! ```
//! use oxydra_types::{CallId, Message, MessageRole, ToolCall};
//!
//! let call = ToolCall::new(CallId::from("call_1"), "file_read", r#"{"path":"README.md"}"#);
//! let assistant = Message::assistant_with_tool_calls(None, vec![call.clone()]);
//! assert_eq!(assistant.role, MessageRole::Assistant);
//! assert_eq!(call.parsed_arguments().unwrap()["path"], "README.md");
//!
//! let result = Message::tool_result(call.id.clone(), "file_read", "# Oxydra");
//! let json = serde_json::to_string(&result).unwrap();
//! assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), result);
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod checkpoint;
mod content;
mod error;
mod event;
mod ids;
mod media_sniff;
mod message;
mod progress;
mod provenance;
mod reasoning;
mod stream;
mod tool;
mod usage;

pub use checkpoint::{Checkpoint, CheckpointEntry, EntryState, NotCaptured};
pub use content::{ContentPart, PDF_MEDIA_TYPE, human_size};
pub use error::TypesError;
pub use event::{ModelFallback, ProviderRetry, RuntimeEvent};
pub use ids::{ApprovalId, CallId, RunId, SessionId};
pub use media_sniff::{is_image_media_type, sniff_media_type};
pub use message::{Message, MessageRole};
pub use progress::{RuntimeProgressEvent, RuntimeProgressKind};
pub use provenance::{Source, SourceKind};
pub use reasoning::ReasoningPart;
pub use stream::{FinishReason, StreamItem, ToolCallDelta};
pub use tool::{SafetyTier, TOOL_FAILURE_PREFIX, ToolCall, ToolSchema};
pub use usage::Usage;
