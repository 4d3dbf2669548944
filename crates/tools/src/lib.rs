//! Tools an Oxydra agent can call.
//!
//! `oxydra-tools` owns the [`Tool`] trait (a schema, a [`SafetyTier`] and an async
//! `execute`), the [`ToolContext`] a call runs in, the [`ToolRegistry`] that names
//! every tool an agent may use, and the built-in tools with their workspace and
//! network policy. Running tools under rules, consent and timeouts is the job of
//! `oxydra-executor`, one layer up.
//!
//! ```
//! use async_trait::async_trait;
//! use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
//! use oxydra_types::{SafetyTier, ToolSchema};
//!
//! struct Clock;
//!
//! #[async_trait]
//! impl Tool for Clock {
//!     fn schema(&self) -> ToolSchema {
//!         ToolSchema::new("clock", "Tells the time", serde_json::json!({"type": "object"}))
//!     }
//!     fn safety_tier(&self) -> SafetyTier {
//!         SafetyTier::ReadOnly
//!     }
//!     async fn execute(
//!         &self,
//!         _args: serde_json::Value,
//!         _ctx: &ToolContext,
//!     ) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text("noon"))
//!     }
//! }
//!
//! let mut registry = ToolRegistry::new();
//! registry.register(Clock).unwrap();
//! assert!(registry.register(Clock).is_err()); // names are unique
//! assert_eq!(registry.schemas()[0].name, "clock");
//! ```

mod context;
mod error;
mod registry;
mod tool;

pub use context::ToolContext;
pub use error::ToolError;
pub use registry::ToolRegistry;
pub use tool::{Tool, ToolOutput};

pub use oxydra_types::{SafetyTier, ToolSchema};
