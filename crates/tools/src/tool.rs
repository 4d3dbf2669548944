//! The `Tool` trait and what a tool returns.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use oxydra_types::{ContentPart, SafetyTier, Source, ToolSchema};

use crate::call_preview::CallPreview;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::permission_scope::PermissionScope;
use crate::rerun::{CrashedCall, RerunSafety};

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub content: String,
    /// Structured output, when the tool has any (kept for callers; the model gets `content`).
    pub structured: Option<serde_json::Value>,
    /// Parts the model receives after `content` (an image `file_read` read, an MCP
    /// server's image): they travel in the tool's result message, for providers
    /// that take them there.
    pub parts: Vec<ContentPart>,
}

impl ToolOutput {
    /// Output that is just text.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            structured: None,
            parts: Vec::new(),
        }
    }

    /// Structured output, whose text for the model is `text`.
    pub fn structured(text: impl Into<String>, value: serde_json::Value) -> Self {
        Self {
            content: text.into(),
            structured: Some(value),
            parts: Vec::new(),
        }
    }

    /// This output with `parts` after its text.
    pub fn with_parts(mut self, parts: Vec<ContentPart>) -> Self {
        self.parts = parts;
        self
    }
}

/// A capability the model can call.
///
/// Implementations receive arguments that the executor has already parsed and
/// validated against [`Tool::schema`]; they still must not panic on odd values.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and JSON Schema of the parameters.
    fn schema(&self) -> ToolSchema;

    /// How the executor must schedule the tool.
    fn safety_tier(&self) -> SafetyTier;

    /// The longest one call may take when the tool bounds its calls itself (a shell
    /// command's `timeout_secs`, an MCP server's call timeout). The executor then waits
    /// at least this long before its own per-call timeout cuts the call off, so the
    /// tool's timeout fires first and reports what it has. `None` (the default): the
    /// executor's per-call timeout alone applies.
    fn max_execution_time(&self) -> Option<Duration> {
        None
    }

    /// Whether the executor must ask the permission broker before each call, and what
    /// a standing grant then covers: `Some(scope)` makes the tool `requires_consent`
    /// with that scope, as a rule would (`#[tool(consent = "session")]` sets it). A
    /// `requires_consent` rule given for the tool takes precedence over this. `None`
    /// (the default): only the rules (and, for `Privileged` tools, the executor's
    /// default) decide.
    fn consent(&self) -> Option<PermissionScope> {
        None
    }

    /// What a call with `args` will do, for a person deciding whether it may run (a
    /// consent question, a list of pending approvals): a command, a URL, a diff against
    /// the current file under `workspace_root`. The default shows the arguments as
    /// JSON. Called with arguments that passed the schema; it must not change anything
    /// and may read small files (the built-in file tools read the file they would
    /// change, up to 256 KiB).
    fn preview(&self, args: &serde_json::Value, workspace_root: &Path) -> CallPreview {
        let _ = workspace_root;
        CallPreview::arguments(args)
    }

    /// Where the text a call with `args` returns comes from (DESIGN.md §3.13):
    /// `web:<url>` for a fetched page, `mcp:<server>` for an MCP server's result,
    /// `workspace` for a file of the workspace, `command` for a command's output. The
    /// runtime stamps the call's result with it, and once a source its `[provenance]`
    /// policy names is in the context, side-effecting and privileged calls wait for a
    /// person. `None` (the default): the tool returns nothing from outside the
    /// person's control. Called with arguments that passed the schema.
    fn output_source(&self, args: &serde_json::Value) -> Option<Source> {
        let _ = args;
        None
    }

    /// A digest of what a call with `args` is about to change (the file it writes, as
    /// it is now), taken just before a side-effecting or privileged call runs and
    /// stored with its intent; [`rerun_after_crash`](Self::rerun_after_crash) gets it
    /// back. The format is the tool's own. `None` (the default): nothing to record.
    /// Called with arguments that passed the schema, on a blocking thread: it may read
    /// files, and must not change anything.
    fn state_before(&self, args: &serde_json::Value, workspace_root: &Path) -> Option<String> {
        let _ = (args, workspace_root);
        None
    }

    /// Whether `call` — started before the process stopped, its outcome never stored —
    /// may run again on resume: [`RerunSafety::Safe`] runs it again (under the rules
    /// and consent of any call), [`RerunSafety::AlreadyDone`] and
    /// [`RerunSafety::Unknown`] do not (the model is told which). The built-in file
    /// tools compare the file with what the call meant to write and with
    /// [`CrashedCall::before`]. The default: `Safe` for a read-only tool, `Unknown`
    /// for any other — a side effect is never repeated on a guess. Called on a
    /// blocking thread; it must not change anything.
    fn rerun_after_crash(&self, call: &CrashedCall<'_>) -> RerunSafety {
        let _ = call;
        match self.safety_tier() {
            SafetyTier::ReadOnly => RerunSafety::Safe,
            SafetyTier::SideEffecting | SafetyTier::Privileged => RerunSafety::Unknown,
        }
    }

    /// Run the call. Long-running tools watch `ctx.cancel`.
    async fn execute(
        &self,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        Self::text(content)
    }
}

impl From<&str> for ToolOutput {
    fn from(content: &str) -> Self {
        Self::text(content)
    }
}

/// Structured output: the model gets the value as JSON text, callers the value.
impl From<serde_json::Value> for ToolOutput {
    fn from(value: serde_json::Value) -> Self {
        Self::structured(value.to_string(), value)
    }
}
