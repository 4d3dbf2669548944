//! The coordinator's tools that steer runs already started: `cancel_agent_run`,
//! `list_pending_approvals` and `decide_approval`. They answer with the same JSON as
//! `DELETE /runs/{id}`, `GET /runs/{id}` (its `pending_approvals`) and
//! `POST /runs/{id}/approvals/{approval_id}`: the answer, or the API's error body,
//! which says what to correct (an unknown id, a run that no longer waits, a request
//! decided already).
//!
//! The coordinator does not give them to its own agents by default (an orchestrating
//! agent watches the runs it starts; a person decides approvals). An MCP server of the
//! coordinator (`oxydra-mcp-server`) serves them, and an application may register them
//! for an in-process agent of its own with [`run_control_tool_rules`].

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_executor::{ToolRule, ToolRuleKind};
use oxydra_runtime::ApprovalDecision;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};

use crate::coordinator::{Coordinator, CoordinatorHandle};
use crate::error::CoordinatorError;

/// Name of the run-cancelling tool.
pub const CANCEL_AGENT_RUN: &str = "cancel_agent_run";
/// Name of the tool that lists a run's requests waiting for a decision.
pub const LIST_PENDING_APPROVALS: &str = "list_pending_approvals";
/// Name of the tool that decides one request.
pub const DECIDE_APPROVAL: &str = "decide_approval";
/// The names of the three run-control tools.
pub const RUN_CONTROL_TOOL_NAMES: [&str; 3] =
    [CANCEL_AGENT_RUN, LIST_PENDING_APPROVALS, DECIDE_APPROVAL];

/// The decisions, as the API spells them.
const DECISIONS: [&str; 3] = ["approve_once", "approve_for_session", "deny"];

/// The two approval tools, `list_pending_approvals` and `decide_approval`, bound to
/// `handle`. Offer them where runs may wait for a person (a permission broker that
/// defers, such as `oxydra_executor::DeferAll`); elsewhere no run ever waits.
pub fn approval_tools(handle: &CoordinatorHandle) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ListPendingApprovals(handle.clone())),
        Arc::new(DecideApproval(handle.clone())),
    ]
}

/// The rules the run-control tools need in any executor that runs them:
/// `list_pending_approvals` is read-only, but its answer changes as requests are
/// decided, so it is never deduped.
pub fn run_control_tool_rules() -> Vec<ToolRule> {
    vec![ToolRule::new(
        LIST_PENDING_APPROVALS,
        ToolRuleKind::NeverDedupe,
    )]
}

/// The coordinator `handle` points to, or the API's `unavailable` body once it has
/// shut down.
fn coordinator(handle: &CoordinatorHandle) -> Result<Coordinator, ToolError> {
    handle
        .upgrade()
        .ok_or_else(|| ToolError::Failed(api_body("unavailable", "the coordinator has shut down")))
}

/// An error body in the shape of the API's.
fn api_body(error: &str, message: &str) -> String {
    json!({"error": error, "message": message}).to_string()
}

/// The API's JSON error body ([`CoordinatorError::body`]) as the tool's error.
fn api_error(error: CoordinatorError) -> ToolError {
    if error.is_internal() {
        tracing::error!(error = %error, "coordinator request failed");
    }
    ToolError::Failed(error.body().to_string())
}

fn to_value(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|error| ToolError::Failed(error.to_string()))
}

/// The string argument `name`, which the input schema requires.
fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArguments {
            message: format!("`{name}` must be a string"),
        })
}

/// The decision the arguments spell, refused (with what to send instead) when it is
/// none of the three or carries a reason with an approval.
fn decision(args: &Value) -> Result<ApprovalDecision, ToolError> {
    let name = string_arg(args, "decision")?;
    let reason = args.get("reason").filter(|reason| !reason.is_null());
    let refused = |message: String| ToolError::Failed(api_body("invalid_decision", &message));
    if !DECISIONS.contains(&name) {
        return Err(refused(format!(
            "`decision` must be one of {}; found `{name}`",
            DECISIONS.join(", ")
        )));
    }
    if reason.is_some() && name != "deny" {
        return Err(refused(format!(
            "`reason` goes with `deny` only (the model reads it); send `{name}` without it"
        )));
    }
    let mut body = json!({"decision": name});
    if let (Some(reason), Some(object)) = (reason, body.as_object_mut()) {
        object.insert("reason".to_owned(), reason.clone());
    }
    serde_json::from_value(body).map_err(|error| refused(error.to_string()))
}

/// `cancel_agent_run`: a pending run ends `cancelled` at once; a running one is
/// signalled and awaited for a bounded time. An ended run cannot be cancelled (the
/// `not_cancellable` error body says its status).
#[derive(Debug, Clone)]
pub struct CancelAgentRun(pub CoordinatorHandle);

#[async_trait]
impl Tool for CancelAgentRun {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            CANCEL_AGENT_RUN,
            "Cancel a run started with start_agent_run. A pending run ends `cancelled` at \
             once; a running one is stopped. Returns the run as it is afterwards; a run that \
             has already ended cannot be cancelled.",
            json!({
                "type": "object",
                "required": ["run_id"],
                "properties": {"run_id": {"type": "string"}},
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let run_id = string_arg(&args, "run_id")?;
        let coordinator = self
            .0
            .upgrade()
            .ok_or_else(|| ToolError::Failed("the coordinator has shut down".into()))?;
        let run = coordinator.cancel_run(run_id).await.map_err(api_error)?;
        Ok(ToolOutput::from(to_value(run)?))
    }
}

/// `list_pending_approvals`: the consent requests a run waits on. Never deduped (see
/// [`run_control_tool_rules`]).
#[derive(Debug, Clone)]
pub struct ListPendingApprovals(pub CoordinatorHandle);

#[async_trait]
impl Tool for ListPendingApprovals {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            LIST_PENDING_APPROVALS,
            "List the tool calls a run (status `waiting_approval`) waits on a person to \
             decide: each with its approval_id, tool, arguments (as JSON text), tier, \
             scope, requested_at and expires_at (Unix ms; an expired request is a denial). \
             Decide each with decide_approval.",
            json!({
                "type": "object",
                "required": ["run_id"],
                "properties": {"run_id": {"type": "string", "minLength": 1}},
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let run_id = string_arg(&args, "run_id")?;
        let pending = coordinator(&self.0)?
            .pending_approvals(run_id)
            .await
            .map_err(api_error)?;
        Ok(ToolOutput::from(
            json!({"run_id": run_id, "pending_approvals": to_value(pending)?}),
        ))
    }
}

/// `decide_approval`: answers one request; when the run's last open request is
/// decided, the run resumes (on any worker).
#[derive(Debug, Clone)]
pub struct DecideApproval(pub CoordinatorHandle);

#[async_trait]
impl Tool for DecideApproval {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            DECIDE_APPROVAL,
            "Decide a tool call a run waits on (see list_pending_approvals): \
             `approve_once` runs it, `approve_for_session` runs it and every later call in \
             its scope, `deny` refuses it (the run's model reads `reason` and goes on). \
             Once the run's last request is decided it resumes. Returns the run.",
            json!({
                "type": "object",
                "required": ["run_id", "approval_id", "decision"],
                "properties": {
                    "run_id": {"type": "string", "minLength": 1},
                    "approval_id": {"type": "string", "minLength": 1},
                    "decision": {"type": "string", "enum": DECISIONS},
                    "reason": {
                        "type": "string",
                        "description": "With `deny` only: why, for the run's model."
                    }
                },
                "additionalProperties": false
            }),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::SideEffecting
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let run_id = string_arg(&args, "run_id")?;
        let approval_id = string_arg(&args, "approval_id")?;
        let decision = decision(&args)?;
        let run = coordinator(&self.0)?
            .decide_approval(run_id, approval_id, decision)
            .await
            .map_err(api_error)?;
        Ok(ToolOutput::from(to_value(run)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(args: Value) -> String {
        match decision(&args) {
            Err(ToolError::Failed(body)) => body,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn decisions_parse_as_the_api_spells_them() {
        assert_eq!(
            decision(&json!({"decision": "approve_once"})).unwrap(),
            ApprovalDecision::ApproveOnce
        );
        assert_eq!(
            decision(&json!({"decision": "approve_for_session", "reason": null})).unwrap(),
            ApprovalDecision::ApproveForSession
        );
        assert_eq!(
            decision(&json!({"decision": "deny", "reason": "not on friday"})).unwrap(),
            ApprovalDecision::Deny {
                reason: Some("not on friday".to_owned())
            }
        );
        assert_eq!(
            decision(&json!({"decision": "deny"})).unwrap(),
            ApprovalDecision::Deny { reason: None }
        );
    }

    #[test]
    fn bad_decisions_are_refused_with_what_to_send() {
        let unknown = refusal(json!({"decision": "maybe"}));
        assert!(
            unknown.contains("invalid_decision") && unknown.contains("approve_once"),
            "{unknown}"
        );
        let reasoned = refusal(json!({"decision": "approve_once", "reason": "fine"}));
        assert!(reasoned.contains("`deny` only"), "{reasoned}");
        let typed = refusal(json!({"decision": "deny", "reason": 7}));
        assert!(typed.contains("invalid_decision"), "{typed}");
        assert!(matches!(
            decision(&json!({"decision": 1})),
            Err(ToolError::InvalidArguments { .. })
        ));
    }

    #[test]
    fn the_tools_are_named_as_listed_and_only_the_lister_reads() {
        let handle = CoordinatorHandle::default();
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(CancelAgentRun(handle.clone())),
            Arc::new(ListPendingApprovals(handle.clone())),
            Arc::new(DecideApproval(handle)),
        ];
        let names: Vec<String> = tools.iter().map(|tool| tool.schema().name).collect();
        assert_eq!(names, RUN_CONTROL_TOOL_NAMES);
        let tiers: Vec<SafetyTier> = tools.iter().map(|tool| tool.safety_tier()).collect();
        assert_eq!(
            tiers,
            [
                SafetyTier::SideEffecting,
                SafetyTier::ReadOnly,
                SafetyTier::SideEffecting
            ]
        );
    }

    #[tokio::test]
    async fn a_coordinator_that_is_gone_is_the_apis_unavailable_body() {
        let tool = DecideApproval(CoordinatorHandle::default());
        let ctx = ToolContext::new(
            ".",
            tokio_util::sync::CancellationToken::new(),
            oxydra_types::CallId::generate(),
        );
        let args = json!({"run_id": "r", "approval_id": "a", "decision": "deny"});
        let Err(ToolError::Failed(body)) = tool.execute(args, &ctx).await else {
            panic!("not refused");
        };
        assert!(body.contains("unavailable"), "{body}");
    }
}
