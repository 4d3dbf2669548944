//! The route handlers of the HTTP API (docs/coordinator.md).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::errors::ApiError;
use oxydra_runtime::ApprovalDecision;

use super::extract::{JsonBody, PathPair, PathParam};
use crate::coordinator::{AgentListing, Coordinator, RunCreated};
use crate::run::Run;

/// The body of `POST /runs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRunBody {
    agent_name: String,
    #[serde(default = "empty_object")]
    parameters: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// `GET /agents`.
pub(crate) async fn list_agents(
    State(coordinator): State<Coordinator>,
) -> Result<Json<AgentListing>, ApiError> {
    Ok(Json(coordinator.list_blueprints().await?))
}

/// `POST /runs`: `201` with `{run_id, status}`.
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
pub(crate) async fn get_run(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(coordinator.get_run(&run_id).await?))
}

/// `DELETE /runs/{id}`: cancels the run, answers with it as it is afterwards.
pub(crate) async fn cancel_run(
    State(coordinator): State<Coordinator>,
    PathParam(run_id): PathParam,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(coordinator.cancel_run(&run_id).await?))
}

/// `POST /runs/{id}/approvals/{approval_id}` with `{"decision", "reason"?}`: decides
/// one request the run waits for, answers with the run as it is afterwards.
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
