//! The one error type of `oxydra-executor`: why a tool call did not produce output.

use std::time::Duration;

use oxydra_tools::ToolError;
use thiserror::Error;

use crate::consent::PermissionScope;
use crate::validation::SchemaViolation;

/// Why a tool call produced no output. Every variant becomes the tool-result message
/// `Tool execution failed: {error}` that the model can correct itself from; none of
/// them aborts the batch.
#[derive(Debug, Error)]
pub enum ToolExecutionError {
    /// The raw arguments are not valid JSON, or do not match the tool's schema.
    #[error("invalid arguments for tool `{tool_name}`: {details} Expected schema: {schema}")]
    InvalidArguments {
        /// The tool.
        tool_name: String,
        /// What is wrong: the JSON parse error with its position, or each schema
        /// violation with its JSON path, keyword and expected vs found.
        details: String,
        /// The schema violations (empty when the JSON did not parse).
        violations: Vec<SchemaViolation>,
        /// The tool's parameter schema, compact JSON.
        schema: String,
    },
    /// The tool's own parameter schema does not compile, so no call of it can be checked.
    #[error("tool `{tool_name}` has an invalid parameter schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool_name: String,
        /// The schema compiler's message.
        message: String,
    },
    /// No tool of this name is registered.
    #[error("unknown tool `{tool_name}`; available tools: {}", available.join(", "))]
    NotFound {
        /// The name the model used.
        tool_name: String,
        /// Every registered tool, in name order.
        available: Vec<String>,
    },
    /// A configured tool rule refused the call.
    #[error("{0}")]
    RuleViolation(ToolRuleViolation),
    /// Consent was refused, timed out or could not be asked for.
    #[error("permission denied for tool `{tool_name}` (scope: {scope}): {reason}")]
    PermissionDenied {
        /// The tool.
        tool_name: String,
        /// The scope consent was asked for.
        scope: PermissionScope,
        /// Why: denied by the broker, timed out, or no broker configured.
        reason: String,
    },
    /// The call ran past the execution timeout and was stopped.
    #[error("tool `{tool_name}` timed out after {} ms and was stopped", duration.as_millis())]
    Timeout {
        /// The tool.
        tool_name: String,
        /// The limit it ran into.
        duration: Duration,
    },
    /// The same side-effecting call (same tool, same arguments) ran within the dedupe
    /// window; a side effect is never repeated by accident.
    #[error(
        "duplicate call to `{tool_name}` with the same arguments {} ms ago was refused \
         (dedupe window {} s); its side effect already happened — change the arguments \
         if you really mean to run it again",
        age.as_millis(),
        window.as_secs()
    )]
    Deduplicated {
        /// The tool.
        tool_name: String,
        /// How long ago the earlier identical call ran.
        age: Duration,
        /// The dedupe window.
        window: Duration,
    },
    /// The tool ran and returned an error.
    #[error("{0}")]
    Failed(ToolError),
    /// The tool panicked; the executor caught it and keeps working.
    #[error("tool `{tool_name}` panicked: {message}")]
    Panicked {
        /// The tool.
        tool_name: String,
        /// The panic message, when it was a string.
        message: String,
    },
    /// The session was cancelled while the call was pending or running.
    #[error("cancelled")]
    Cancelled,
}

/// A tool rule that refused a call; the message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ToolRuleViolation {
    /// `max_calls`: the tool reached its limit in this batch.
    #[error(
        "rule max_calls refused `{tool_name}`: it may be called at most {limit} time(s) per batch"
    )]
    MaxCalls {
        /// The tool.
        tool_name: String,
        /// The limit.
        limit: u32,
    },
    /// `exclusive_group`: another tool of the group was already used in this batch.
    #[error(
        "rule exclusive_group refused `{tool_name}`: `{used_by}` from the same exclusive group \
         ({}) was already used in this batch",
        members.join(", ")
    )]
    ExclusiveGroup {
        /// The tool.
        tool_name: String,
        /// The tools of the group.
        members: Vec<String>,
        /// The group member that was used first.
        used_by: String,
    },
    /// `start_constraint`: start tools must run successfully first.
    #[error("rule start_constraint refused `{tool_name}`: these tools must run first: {}", pending.join(", "))]
    StartConstraint {
        /// The tool.
        tool_name: String,
        /// Start tools that have not run yet.
        pending: Vec<String>,
    },
    /// `requires_preceding_tools`: tools that must have run earlier have not.
    #[error(
        "rule requires_preceding_tools refused `{tool_name}`: call {} first",
        missing.join(", ")
    )]
    RequiresPrecedingTools {
        /// The tool.
        tool_name: String,
        /// Required tools that have not run.
        missing: Vec<String>,
    },
    /// `requires_following_tools`: tools that must come after this one already ran.
    #[error(
        "rule requires_following_tools refused `{tool_name}`: it must be called before {}, \
         which already ran",
        already_called.join(", ")
    )]
    RequiresFollowingTools {
        /// The tool.
        tool_name: String,
        /// The following tools that already ran.
        already_called: Vec<String>,
    },
    /// `cooldown`: the tool ran too recently.
    #[error(
        "rule cooldown refused `{tool_name}`: it may run once every {} ms; try again in {} ms",
        cooldown.as_millis(),
        remaining.as_millis()
    )]
    Cooldown {
        /// The tool.
        tool_name: String,
        /// The configured cooldown.
        cooldown: Duration,
        /// Time left until it may run again.
        remaining: Duration,
    },
}

impl ToolExecutionError {
    /// A short, stable snake_case name of the variant (for logs and metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::InvalidSchema { .. } => "invalid_schema",
            Self::NotFound { .. } => "not_found",
            Self::RuleViolation(_) => "rule_violation",
            Self::PermissionDenied { .. } => "permission_denied",
            Self::Timeout { .. } => "timeout",
            Self::Deduplicated { .. } => "deduplicated",
            Self::Failed(_) => "failed",
            Self::Panicked { .. } => "panicked",
            Self::Cancelled => "cancelled",
        }
    }
}
