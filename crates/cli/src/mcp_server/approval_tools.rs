//! `list_pending_approvals` and `decide_approval`: the MCP face of approvals that wait
//! (served when `approve = "ask"`, the one mode in which a run waits for a person).
//! Same JSON as `GET /runs/{id}` (its `pending_approvals`) and
//! `POST /runs/{id}/approvals/{approval_id}`: the answer, or the API's error body,
//! which says what to correct (an unknown id, a run that no longer waits, a request
//! decided already).

use async_trait::async_trait;
use oxydra::coordinator::{ApiError, Coordinator, CoordinatorHandle};
use oxydra::runtime::ApprovalDecision;
use oxydra::tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra::types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};

/// Name of the tool that lists a run's requests waiting for a decision.
pub const LIST_PENDING_APPROVALS: &str = "list_pending_approvals";
/// Name of the tool that decides one request.
pub const DECIDE_APPROVAL: &str = "decide_approval";

/// The decisions, as the API spells them.
const DECISIONS: [&str; 3] = ["approve_once", "approve_for_session", "deny"];

/// `list_pending_approvals`: the consent requests a run waits on.
#[derive(Debug, Clone)]
pub struct ListPendingApprovals(pub CoordinatorHandle);

/// `decide_approval`: answers one request; when the run's last open request is
/// decided, the run resumes (on any worker).
#[derive(Debug, Clone)]
pub struct DecideApproval(pub CoordinatorHandle);

/// The string argument `name`, which the input schema requires.
fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArguments {
            message: format!("`{name}` must be a string"),
        })
}

fn coordinator(handle: &CoordinatorHandle) -> Result<Coordinator, ToolError> {
    handle
        .upgrade()
        .ok_or_else(|| ToolError::Failed(api_body("unavailable", "the coordinator has shut down")))
}

/// An error body in the shape of the API's.
fn api_body(error: &str, message: &str) -> String {
    json!({"error": error, "message": message}).to_string()
}

fn output(value: Value) -> ToolOutput {
    ToolOutput::from(value)
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
            .map_err(|error| ToolError::Failed(ApiError::from(error).body.to_string()))?;
        let pending =
            serde_json::to_value(pending).map_err(|error| ToolError::Failed(error.to_string()))?;
        Ok(output(
            json!({"run_id": run_id, "pending_approvals": pending}),
        ))
    }
}

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
            .map_err(|error| ToolError::Failed(ApiError::from(error).body.to_string()))?;
        let run =
            serde_json::to_value(run).map_err(|error| ToolError::Failed(error.to_string()))?;
        Ok(output(run))
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
}
