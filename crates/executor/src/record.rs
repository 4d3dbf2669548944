//! What a batch returns: one record per call, in request order.

use std::time::{Duration, Instant};

use oxydra_tools::ToolOutput;
use oxydra_types::{ContentPart, SafetyTier, TOOL_FAILURE_PREFIX, ToolCall};

use crate::error::ToolExecutionError;

/// What the model reads before an output that dedupe reused: a reused output
/// is marked as such, so the model knows it may be stale.
pub const REUSED_OUTPUT_MARKER: &str =
    "[reused output of an identical call made earlier in this session]\n";

/// The most bytes of an error message the model (and the `tool_failed` event) gets;
/// longer messages are cut with the output truncation marker. Errors can echo what
/// the model sent (a megabyte-long tool name or path), so they are bounded like output
/// (the same 16 KiB as the built-in tools' default output limit).
pub const MAX_ERROR_BYTES: usize = 16 * 1024;

/// `error` as the model reads it: its message, cut at [`MAX_ERROR_BYTES`].
pub(crate) fn error_text(error: &ToolExecutionError) -> String {
    let message = error.to_string();
    match oxydra_tools::truncate_output(&message, MAX_ERROR_BYTES) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

/// The outcome of one call.
#[derive(Debug)]
pub struct ToolCallRecord {
    /// The call as the model sent it (raw arguments, `request_heartbeat` included).
    pub call: ToolCall,
    /// The tool's tier; `None` when no tool of that name exists.
    pub tier: Option<SafetyTier>,
    /// The output, or why there is none.
    pub outcome: Result<ToolOutput, ToolExecutionError>,
    /// Whether the output is an earlier identical read-only call's, reused by dedupe.
    pub reused: bool,
    /// When the call started running (or was resolved without running).
    pub started_at: Instant,
    /// When it finished.
    pub finished_at: Instant,
    /// `finished_at - started_at`.
    pub duration: Duration,
}

impl ToolCallRecord {
    /// The tool-result text the model receives: the output (after
    /// [`REUSED_OUTPUT_MARKER`] when dedupe reused it), or
    /// `Tool execution failed: {error}` (the error's message cut at
    /// [`MAX_ERROR_BYTES`]).
    pub fn content_for_model(&self) -> String {
        match &self.outcome {
            Ok(output) if self.reused => format!("{REUSED_OUTPUT_MARKER}{}", output.content),
            Ok(output) => output.content.clone(),
            Err(error) => format!("{TOOL_FAILURE_PREFIX}: {}", error_text(error)),
        }
    }

    /// The parts (images, documents) the model receives after
    /// [`content_for_model`](Self::content_for_model): the output's, also when dedupe
    /// reused it; none when the call failed.
    pub fn parts_for_model(&self) -> &[ContentPart] {
        match &self.outcome {
            Ok(output) => &output.parts,
            Err(_) => &[],
        }
    }

    /// Whether the call produced output.
    pub fn is_success(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ToolExecutionError> {
        self.outcome.as_ref().err()
    }
}

/// Every call of a batch, in the order the model requested them.
#[derive(Debug, Default)]
pub struct ToolBatchResult {
    /// One record per call, in request order.
    pub records: Vec<ToolCallRecord>,
    /// Wall time of the whole batch.
    pub duration: Duration,
    /// Whether the model asked to keep going: a call that carried
    /// `"request_heartbeat": true` produced output (it ran successfully, or dedupe
    /// reused an earlier output), or a tool with a `continue_loop` rule ran
    /// successfully. A call refused before running (invalid arguments, a rule,
    /// consent) or failing does not ask for continuation.
    pub requests_continuation: bool,
}

impl ToolBatchResult {
    /// How many calls failed.
    pub fn failures(&self) -> usize {
        self.records.iter().filter(|r| r.outcome.is_err()).count()
    }

    /// Whether every call produced output.
    pub fn all_succeeded(&self) -> bool {
        self.failures() == 0
    }
}
