//! The route handlers of the HTTP API (docs/coordinator.md).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::errors::ApiError;
use crate::api_schemas::{ApprovalDecisionDoc, ErrorBody};
use oxydra_runtime::ApprovalDecision;

use super::extract::{JsonBody, OptionalJsonBody, PathPair, PathParam};
use crate::coordinator::{AgentListing, Coordinator, RunCreated};
use crate::run::Run;
use crate::run_changes::{RevertRequest, RunChanges, RunReverted};

/// The body of `POST /runs`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRunBody {
    /// The blueprint to run.
    agent_name: String,
    /// Its parameters, checked against its `parameters_schema` (`{}` when absent).
    #[serde(default = "empty_object")]
    parameters: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// `GET /agents`.
#[utoipa::path(get, path = "/agents", tag = "agents", responses(
    (status = 200, description = "Every blueprint", body = AgentListing),
))]
pub(crate) async fn list_agents(
    State(coordinator): State<Coordinator>,
) -> Result<Json<AgentListing>, ApiError> {
    Ok(Json(coordinator.list_blueprints().await?))
}

/// `POST /runs`: `201` with `{run_id, status}`.
#[utoipa::path(post, path = "/runs", tag = "runs",
    request_body(content = CreateRunBody, content_type = "application/json"),
    responses(
        (status = 201, description = "The new run, `pending`", body = RunCreated),
        (status = 400, description = "`malformed_json`, `invalid_request` or `parameter_validation_failed` (with `validation_errors: [{path, message, schema_path}]` and `parameters_schema`)", body = ErrorBody),
        (status = 404, description = "`agent_not_found`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
    ))]
pub(crate) async fn create_run(
    State(coordinator): State<Coordinator>,
    JsonBody(body): JsonBody<CreateRunBody>,
) -> Result<(StatusCode, Json<RunCreated>), ApiError> {
    let created = coordinator
        .create_run(&body.agent_name, body.parameters)
        .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `GET /runs/{id}`.
#[utoipa::path(get, path = "/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run (`pending_approvals` while `waiting_approval`)", body = Run),
        (status = 404, description = "`run_not_found`", body = ErrorBody),
    ))]
pub(crate) async fn get_run(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(coordinator.get_run(&run_id).await?))
}

/// `DELETE /runs/{id}`: cancels the run, answers with it as it is afterwards.
#[utoipa::path(delete, path = "/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run after cancelling it", body = Run),
        (status = 404, description = "`run_not_found`", body = ErrorBody),
        (status = 409, description = "`run_not_cancellable`: it already ended", body = ErrorBody),
    ))]
pub(crate) async fn cancel_run(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(coordinator.cancel_run(&run_id).await?))
}

/// `GET /runs/{id}/changes`: what the run changed in the workspace, per turn.
#[utoipa::path(get, path = "/runs/{id}/changes", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "Per turn that changed something: each path with its kind of change and a diff summary (`lines_added`, `lines_removed`, `diff` for a text file that still holds the turn's result); what was not captured and what cannot be reverted", body = RunChanges),
        (status = 404, description = "`run_not_found`, or `changes_not_recorded` (the server has no checkpoint store)", body = ErrorBody),
    ))]
pub(crate) async fn run_changes(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
) -> Result<Json<RunChanges>, ApiError> {
    Ok(Json(coordinator.run_changes(&run_id).await?))
}

/// `POST /runs/{id}/revert` with `{"to_turn"?, "force"?}` (or no body): takes the
/// files back to the state before a turn (default: everything the run changed).
#[utoipa::path(post, path = "/runs/{id}/revert", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    request_body(content = RevertRequest, description = "Optional (an empty body is `{}`); `Content-Type: application/json` all the same", content_type = "application/json"),
    responses(
        (status = 200, description = "What was put back, what could not be (content not kept) and what cannot be reverted (by turn and tool); stored as a checkpoint of its own, so it can be undone", body = RunReverted),
        (status = 400, description = "`malformed_json` or `invalid_request`", body = ErrorBody),
        (status = 404, description = "`run_not_found`, `turn_not_found` (with `turns`) or `changes_not_recorded`", body = ErrorBody),
        (status = 409, description = "`run_active` (the run has not ended), `session_busy`, `workspace_mismatch` (its changes were recorded in another workspace than this server's, with `recorded` and `served`), or `revert_conflicts`: paths changed since by someone else, with `conflicts: [{path, expected, found, diff}]`; nothing was changed (send `force: true` to overwrite)", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 500, description = "`revert_partial`: some paths were put back (`restored`), others not (`failed: [{path, error}]`); what was put back is recorded, so it can be undone", body = ErrorBody),
    ))]
pub(crate) async fn revert_run(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
    OptionalJsonBody(body): OptionalJsonBody<RevertRequest>,
) -> Result<Json<RunReverted>, ApiError> {
    Ok(Json(coordinator.revert_run(&run_id, body).await?))
}

/// `POST /runs/{id}/approvals/{approval_id}` with `{"decision", "reason"?}`: decides
/// one request the run waits for, answers with the run as it is afterwards.
#[utoipa::path(post, path = "/runs/{id}/approvals/{approval_id}", tag = "approvals",
    params(
        ("id" = String, Path, description = "The run id"),
        ("approval_id" = String, Path, description = "The approval id (unique across runs)"),
    ),
    request_body(content = ApprovalDecisionDoc, description = "`reason` goes with `deny` only", content_type = "application/json"),
    responses(
        (status = 200, description = "The run after the decision", body = Run),
        (status = 400, description = "`malformed_json` or `invalid_request`", body = ErrorBody),
        (status = 404, description = "`run_not_found` or `approval_not_found`", body = ErrorBody),
        (status = 409, description = "`approval_already_decided` or `run_not_waiting_approval`", body = ErrorBody),
    ))]
pub(crate) async fn decide_approval(
    State(coordinator): State<Coordinator>,
    PathPair(run_id, approval_id): PathPair,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Run>, ApiError> {
    let decision = decision_body(body)?;
    Ok(Json(
        coordinator
            .decide_approval(&run_id, &approval_id, decision)
            .await?,
    ))
}

/// The decision of a `POST /runs/{id}/approvals/{approval_id}` body, read as an
/// [`ApprovalDecision`]; strictly: an object with `decision` and, for `deny` only,
/// `reason` — any other field is refused (`400 invalid_request`), as serde alone lets
/// extra fields of a tagged unit variant pass.
fn decision_body(body: Value) -> Result<ApprovalDecision, ApiError> {
    let invalid =
        |message: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message);
    let Some(fields) = body.as_object() else {
        return Err(invalid(
            "the request body must be an object `{\"decision\", \"reason\"?}`".into(),
        ));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "decision" | "reason"))
    {
        return Err(invalid(format!(
            "unknown field `{unknown}`: the body has `decision` and, to deny, `reason`"
        )));
    }
    let decision: ApprovalDecision = serde_json::from_value(body.clone())
        .map_err(|error| invalid(format!("the request body has the wrong shape: {error}")))?;
    if fields.contains_key("reason") && !matches!(decision, ApprovalDecision::Deny { .. }) {
        return Err(invalid(format!(
            "`reason` goes with `deny` only, not `{}`",
            decision.as_str()
        )));
    }
    Ok(decision)
}
