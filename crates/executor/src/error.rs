//! The one error type of `oxydra-executor`: why a tool call did not produce output.

use std::fmt;
use std::time::Duration;

use oxydra_tools::ToolError;
use thiserror::Error;

use crate::permission_scope::PermissionScope;
use crate::schema_violation::SchemaViolation;

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
    /// A configured tool rule refused the call (the message names the rule).
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
    /// The broker deferred consent ([`PermissionDecision::Defer`](crate::PermissionDecision::Defer)):
    /// the call did not run and waits for a person's decision. Never sent to the model:
    /// the run ends waiting for approval.
    #[error("tool `{tool_name}` waits for a person's approval (scope: {scope})")]
    ApprovalDeferred {
        /// The tool.
        tool_name: String,
        /// What an approval for the session would cover.
        scope: PermissionScope,
        /// How long the request stays open.
        ttl: Duration,
        /// Why a person must decide: the provenance hold's reason when the call was
        /// held (`this run read https://… since your last decision`, naming the
        /// untrusted source), else the consent rule or the tier that asks
        /// ([`PermissionRequest::reason`](crate::PermissionRequest::reason)).
        reason: String,
    },
    /// An earlier call of the batch waits for approval, so this one was not run
    /// either (calls run in the order the model asked for them). Never sent to the
    /// model: it runs when the run resumes.
    #[error("tool `{tool_name}` was held back: an earlier call of the batch waits for approval")]
    HeldForApproval {
        /// The tool.
        tool_name: String,
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
    /// A [`Hook`](crate::Hook)'s `before_tool` denied the call (or failed, which denies:
    /// `before_tool` hooks fail closed); the tool never ran.
    #[error("hook `{hook}` denied `{tool_name}`: {reason}")]
    HookDenied {
        /// The tool.
        tool_name: String,
        /// The hook's name.
        hook: String,
        /// The hook's reason (or why the hook failed).
        reason: String,
    },
    /// A hook rewrote the arguments into ones the tool's schema rejects; the tool never ran.
    #[error("hook `{hook}` rewrote the arguments of `{tool_name}` into invalid ones: {source}")]
    HookRewriteInvalid {
        /// The tool.
        tool_name: String,
        /// The hook's name.
        hook: String,
        /// The validation error of the rewritten arguments.
        source: Box<ToolExecutionError>,
    },
}

/// Why a [`Hook`](crate::Hook) could not decide. What follows depends on the hook point:
/// a failing `before_tool` hook denies the call (fail closed); at the other points the
/// failure is reported (a `hook_decision` event with decision `failed`) and ignored
/// (fail open).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HookError {
    /// The hook ran and failed (a command hook: it could not start, or exited non-zero).
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
    },
    /// The hook did not decide within its time limit (a command hook is killed).
    #[error("no decision within {} ms", after.as_millis())]
    TimedOut {
        /// The limit.
        after: Duration,
    },
    /// The hook's decision is not one it may give, or does not parse.
    #[error("invalid decision: {message}")]
    InvalidDecision {
        /// What is wrong with it.
        message: String,
    },
    /// The run was cancelled while the hook was deciding.
    #[error("cancelled")]
    Cancelled,
}

/// A tool rule that refused a call; the message names the rule. It is the payload of
/// [`ToolExecutionError::RuleViolation`], not an error type of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRuleViolation {
    /// `max_calls`: the tool reached its limit in this session run.
    MaxCalls {
        /// The tool.
        tool_name: String,
        /// The limit.
        limit: u32,
    },
    /// `exclusive_group`: another tool of the group was already used in this session run.
    ExclusiveGroup {
        /// The tool.
        tool_name: String,
        /// The tools of the group.
        members: Vec<String>,
        /// The group member that was used first.
        used_by: String,
    },
    /// `start_constraint`: start tools must run successfully first.
    StartConstraint {
        /// The tool.
        tool_name: String,
        /// Start tools that have not run yet.
        pending: Vec<String>,
    },
    /// `requires_preceding_tools`: tools that must have run earlier have not.
    RequiresPrecedingTools {
        /// The tool.
        tool_name: String,
        /// Required tools that have not run.
        missing: Vec<String>,
    },
    /// `requires_following_tools`: tools that must come after this one already ran.
    RequiresFollowingTools {
        /// The tool.
        tool_name: String,
        /// The following tools that already ran.
        already_called: Vec<String>,
    },
    /// `cooldown`: the tool ran too recently.
    Cooldown {
        /// The tool.
        tool_name: String,
        /// The configured cooldown.
        cooldown: Duration,
        /// Time left until it may run again.
        remaining: Duration,
    },
}

impl fmt::Display for ToolRuleViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MaxCalls { tool_name, limit } => write!(
                f,
                "rule max_calls refused `{tool_name}`: it may be called at most {limit} time(s) \
                 per run"
            ),
            Self::ExclusiveGroup {
                tool_name,
                members,
                used_by,
            } => write!(
                f,
                "rule exclusive_group refused `{tool_name}`: `{used_by}` from the same exclusive \
                 group ({}) was already used in this run",
                members.join(", ")
            ),
            Self::StartConstraint { tool_name, pending } => write!(
                f,
                "rule start_constraint refused `{tool_name}`: these tools must run first: {}",
                pending.join(", ")
            ),
            Self::RequiresPrecedingTools { tool_name, missing } => write!(
                f,
                "rule requires_preceding_tools refused `{tool_name}`: call {} first",
                missing.join(", ")
            ),
            Self::RequiresFollowingTools {
                tool_name,
                already_called,
            } => write!(
                f,
                "rule requires_following_tools refused `{tool_name}`: it must be called before \
                 {}, which already ran",
                already_called.join(", ")
            ),
            Self::Cooldown {
                tool_name,
                cooldown,
                remaining,
            } => write!(
                f,
                "rule cooldown refused `{tool_name}`: it may run once every {} ms; try again in \
                 {} ms",
                cooldown.as_millis(),
                remaining.as_millis()
            ),
        }
    }
}

impl ToolExecutionError {
    /// Whether the call did not run because it (or an earlier call of its batch) waits
    /// for a person's approval: such a call gets no result yet.
    pub fn waits_for_approval(&self) -> bool {
        matches!(
            self,
            Self::ApprovalDeferred { .. } | Self::HeldForApproval { .. }
        )
    }

    /// A short, stable snake_case name of the variant (for logs and metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::InvalidSchema { .. } => "invalid_schema",
            Self::NotFound { .. } => "not_found",
            Self::RuleViolation(_) => "rule_violation",
            Self::PermissionDenied { .. } => "permission_denied",
            Self::ApprovalDeferred { .. } => "approval_deferred",
            Self::HeldForApproval { .. } => "held_for_approval",
            Self::Timeout { .. } => "timeout",
            Self::Deduplicated { .. } => "deduplicated",
            Self::Failed(_) => "failed",
            Self::Panicked { .. } => "panicked",
            Self::Cancelled => "cancelled",
            Self::HookDenied { .. } => "hook_denied",
            Self::HookRewriteInvalid { .. } => "hook_rewrite_invalid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_violations_display_the_rule_and_wrap_without_a_second_error_type() {
        let cases = [
            (
                ToolRuleViolation::MaxCalls {
                    tool_name: "t".into(),
                    limit: 2,
                },
                "rule max_calls refused `t`: it may be called at most 2 time(s) per run",
            ),
            (
                ToolRuleViolation::ExclusiveGroup {
                    tool_name: "a".into(),
                    members: vec!["a".into(), "b".into()],
                    used_by: "b".into(),
                },
                "rule exclusive_group refused `a`: `b` from the same exclusive group (a, b) was \
                 already used in this run",
            ),
            (
                ToolRuleViolation::StartConstraint {
                    tool_name: "t".into(),
                    pending: vec!["init".into()],
                },
                "rule start_constraint refused `t`: these tools must run first: init",
            ),
            (
                ToolRuleViolation::RequiresPrecedingTools {
                    tool_name: "w".into(),
                    missing: vec!["r".into(), "s".into()],
                },
                "rule requires_preceding_tools refused `w`: call r, s first",
            ),
            (
                ToolRuleViolation::RequiresFollowingTools {
                    tool_name: "plan".into(),
                    already_called: vec!["w".into()],
                },
                "rule requires_following_tools refused `plan`: it must be called before w, which \
                 already ran",
            ),
            (
                ToolRuleViolation::Cooldown {
                    tool_name: "p".into(),
                    cooldown: Duration::from_millis(1500),
                    remaining: Duration::from_millis(200),
                },
                "rule cooldown refused `p`: it may run once every 1500 ms; try again in 200 ms",
            ),
        ];
        for (violation, expected) in cases {
            assert_eq!(violation.to_string(), expected);
            let error = ToolExecutionError::RuleViolation(violation);
            assert_eq!(error.to_string(), expected);
            assert_eq!(error.kind(), "rule_violation");
        }
    }
}
