//! Tools an Oxydra agent can call.
//!
//! `oxydra-tools` owns the [`Tool`] trait (a schema, a [`SafetyTier`] and an async
//! `execute`), the [`ToolContext`] a call runs in, the [`ToolRegistry`] that names
//! every tool an agent may use, and (with the default feature `builtins`) the
//! built-in tools with their workspace and network policy. Running tools under
//! rules, consent and timeouts is the job of `oxydra-executor`, one layer up.
//!
//! Most tools are written as a [`TypedTool`]: a Rust argument struct whose JSON
//! Schema is derived with `schemars`, so nobody writes schemas by hand; long output
//! is cut with [`truncate_output`].
//!
//! A tool also says whether a call a crash interrupted may run again
//! ([`Tool::rerun_after_crash`], a [`RerunSafety`], from what [`Tool::state_before`]
//! recorded); the built-in file tools check the file, any other tool that is not
//! read-only answers `Unknown` unless it knows better.
//!
//! Without the feature `builtins` the crate is that tool layer alone, and builds
//! none of what only the built-in tools need (an HTTP client, an HTML converter, the
//! Landlock and seccomp sandbox).
//!
//! A hand-written [`Tool`]:
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

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    feature = "builtins",
    doc = r#"
The built-in tools (`file_read`, `file_list`, `file_search`, `web_fetch`,
`file_write`, `file_edit`, `shell_exec`; see [`builtin`]) keep file access
inside the workspace ([`WorkspacePolicy`]) and keep `web_fetch` off private
networks ([`NetworkPolicy`]). The file tools never write a path another program
runs or loads by itself (`.git/`, `.cargo/config.toml`, `.envrc`, `.vscode/`, git
hooks, shell start-up files …) nor Oxydra's own files (any `oxydra.toml`, and the
configuration, database and trust store the embedding program lists): see
[`ProtectedPaths`].

```
use oxydra_tools::{BuiltinToolsConfig, SafetyTier, ToolRegistry};

let registry = ToolRegistry::with_builtins(&BuiltinToolsConfig::default());
assert_eq!(registry.tier("shell_exec"), Some(SafetyTier::Privileged));
let researcher = registry.subset(&["file_read", "web_fetch"]).unwrap();
assert_eq!(researcher.names(), ["file_read", "web_fetch"]);
assert!(registry.subset(&["teleport"]).is_err());
```
"#
)]

#[cfg(any(feature = "builtins", feature = "checkpoints"))]
#[cfg_attr(not(feature = "builtins"), allow(dead_code, unused_imports))]
mod beneath;
#[cfg(feature = "builtins")]
pub mod builtin;
mod call_preview;
#[cfg(feature = "checkpoints")]
pub mod checkpoint;
#[cfg(feature = "builtins")]
mod config;
mod context;
mod error;
mod launch_env;
mod limits;
#[cfg(feature = "builtins")]
mod network_policy;
mod permission_scope;
mod plan;
#[cfg(feature = "builtins")]
mod protected;
mod registry;
mod rerun;
#[cfg(feature = "builtins")]
pub mod sandbox;
mod tool;
mod truncate;
mod typed_tool;
#[cfg(feature = "builtins")]
mod workspace_policy;
#[cfg(feature = "builtins")]
mod write_access;

#[cfg(feature = "builtins")]
pub use builtin::{BUILTIN_TOOL_NAMES, builtin_tool, builtin_tools};
pub use call_preview::{CallPreview, PREVIEW_DIFF_LINES, PREVIEW_TEXT_BYTES};
#[cfg(feature = "builtins")]
pub use config::{BuiltinToolsConfig, ReadConfig, SearchConfig, ShellConfig};
pub use context::ToolContext;
pub use error::ToolError;
pub use launch_env::{
    EnvChange, LOAD_PATH_VARIABLES, PYTHON_SAFE_PATH, interpreter_env_changes,
    neutralize_interpreter_env,
};
pub use limits::{DEFAULT_MAX_MEDIA_BYTES, DEFAULT_OUTPUT_LIMIT_BYTES};
#[cfg(feature = "builtins")]
pub use network_policy::{NetworkPolicy, VettedUrl, forbidden_reason};
pub use permission_scope::PermissionScope;
pub use plan::{
    MAX_PLAN_STEPS, MAX_STEP_CHARS, PlanStep, StepStatus, UPDATE_PLAN, UpdatePlan, UpdatePlanArgs,
};
#[cfg(feature = "builtins")]
pub use protected::{
    CONFIG_FILE_NAME, GitConfigLocations, ProtectedKind, ProtectedPaths, ProtectedWrite,
    ProtectedWriteConsent, Protection, work_tree_top,
};
pub use registry::ToolRegistry;
pub use rerun::{CrashedCall, RerunSafety};
#[cfg(feature = "builtins")]
pub use sandbox::{
    Confinement, RefusedChange, SandboxConfig, SandboxMode, SandboxSupport, WorkspaceChanges,
    commands_refused_unconfinable, sandbox_support,
};
pub use tool::{Tool, ToolOutput};
pub use truncate::truncate_output;
pub use typed_tool::{TypedTool, parameters_schema, parse_arguments};
#[cfg(feature = "builtins")]
pub use workspace_policy::{ResolvedPath, WorkspacePolicy};
#[cfg(feature = "builtins")]
pub use write_access::{WriteAccess, refuse_read_only};

pub use oxydra_types::{SafetyTier, ToolSchema};
