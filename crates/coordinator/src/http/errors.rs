//! JSON error bodies: every failure of the API answers `{"error": <code>, "message": …}`
//! (plus context fields), never an empty or plain-text body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::CoordinatorError;

/// A failed request: a status and its JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The JSON body.
    pub body: Value,
}

impl ApiError {
    /// An error with `status`, a stable `code` and a `message`.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: json!({"error": code, "message": message.into()}),
        }
    }

    /// The same error with one more body field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Some(map) = self.body.as_object_mut() {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    /// `400 malformed_json`.
    pub fn malformed_json(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed_json", message)
    }

    /// `413 payload_too_large`.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
        .with("limit_bytes", limit)
    }

    /// `408 request_timeout`: the body did not arrive within `timeout`.
    pub fn body_timeout(timeout: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request body did not arrive within {} ms",
                timeout.as_millis()
            ),
        )
        .with(
            "timeout_ms",
            u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        )
    }

    /// `401 unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid `Authorization: Bearer <token>` header is required",
        )
    }
}

impl From<CoordinatorError> for ApiError {
    /// The error's own body ([`CoordinatorError::body`]) with the status that fits
    /// its code; an `internal` error is logged.
    fn from(error: CoordinatorError) -> Self {
        let status = status_of(&error);
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %error, "coordinator request failed");
        }
        Self {
            status,
            body: error.body(),
        }
    }
}

/// The HTTP status of a coordinator error: what the domain calls a missing thing,
/// a conflict, a refusal or a failure, in HTTP's words.
fn status_of(error: &CoordinatorError) -> StatusCode {
    match error {
        CoordinatorError::InvalidParameters(_) => StatusCode::BAD_REQUEST,
        CoordinatorError::AgentNotFound { .. }
        | CoordinatorError::RunNotFound { .. }
        | CoordinatorError::ApprovalNotFound { .. }
        | CoordinatorError::TurnNotFound { .. }
        | CoordinatorError::ChangesNotRecorded => StatusCode::NOT_FOUND,
        CoordinatorError::NotCancellable { .. }
        | CoordinatorError::ApprovalAlreadyDecided { .. }
        | CoordinatorError::NotWaitingApproval { .. }
        | CoordinatorError::RunActive { .. }
        | CoordinatorError::RevertConflicts { .. }
        | CoordinatorError::SessionBusy { .. }
        | CoordinatorError::WorkspaceMismatch { .. } => StatusCode::CONFLICT,
        CoordinatorError::RunTreeLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
        CoordinatorError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `404` for a path no route serves.
pub(crate) async fn route_not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for `{}`", uri.path()),
    )
}

/// `405` for a method a route does not serve.
pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("`{}` does not accept {method}", uri.path()),
    )
}

/// The `500` JSON answer to a handler that panicked (`CatchPanicLayer`). The panic
/// message is logged (scrubbed), never sent: it may say more than a client should see.
pub(crate) fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a non-text panic payload");
    tracing::error!(
        panic = %crate::scrub::scrub_text(detail),
        "a coordinator request handler panicked"
    );
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the server failed while handling this request",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RunTreeBound;
    use crate::run::RunStatus;
    use crate::validation::ParameterValidationFailure;

    /// One error of each kind the API answers, and some internal ones.
    fn errors() -> Vec<CoordinatorError> {
        vec![
            CoordinatorError::InvalidParameters(Box::new(ParameterValidationFailure::new(
                "a",
                Vec::new(),
                json!({"type": "object"}),
            ))),
            CoordinatorError::AgentNotFound {
                name: "a".into(),
                available: vec!["b".into()],
            },
            CoordinatorError::RunNotFound { run_id: "r".into() },
            CoordinatorError::NotCancellable {
                run_id: "r".into(),
                status: RunStatus::Completed,
            },
            CoordinatorError::ApprovalNotFound {
                run_id: "r".into(),
                approval_id: "p".into(),
            },
            CoordinatorError::ApprovalAlreadyDecided {
                run_id: "r".into(),
                approval_id: "p".into(),
            },
            CoordinatorError::NotWaitingApproval {
                run_id: "r".into(),
                status: RunStatus::Running,
            },
            CoordinatorError::RunTreeLimit {
                bound: RunTreeBound::Depth,
                root_run_id: "root".into(),
                message: "too deep".into(),
            },
            CoordinatorError::ShuttingDown,
            CoordinatorError::NoRunStore,
            CoordinatorError::StorageTask("died".into()),
        ]
    }

    #[test]
    fn the_status_fits_the_domain_code_and_the_body_is_the_domain_body() {
        for error in errors() {
            let code = error.code();
            let body = error.body();
            let api = ApiError::from(error);
            assert_eq!(
                api.status == StatusCode::INTERNAL_SERVER_ERROR,
                code == "internal",
                "{code}: {}",
                api.status
            );
            assert_eq!(api.body, body);
            assert_eq!(api.body["error"], code);
        }
    }

    #[test]
    fn bodies_carry_their_context_fields() {
        let statuses: Vec<(StatusCode, Value)> = errors()
            .into_iter()
            .map(ApiError::from)
            .map(|api| (api.status, api.body))
            .collect();
        let expected = [
            (StatusCode::BAD_REQUEST, "agent_name", json!("a")),
            (StatusCode::NOT_FOUND, "available_agents", json!(["b"])),
            (StatusCode::NOT_FOUND, "run_id", json!("r")),
            (StatusCode::CONFLICT, "status", json!("completed")),
            (StatusCode::NOT_FOUND, "approval_id", json!("p")),
            (StatusCode::CONFLICT, "approval_id", json!("p")),
            (StatusCode::CONFLICT, "status", json!("running")),
            (
                StatusCode::TOO_MANY_REQUESTS,
                "bound",
                json!("max_run_depth"),
            ),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "error",
                json!("shutting_down"),
            ),
        ];
        for ((status, body), (want_status, key, value)) in statuses.iter().zip(expected) {
            assert_eq!(*status, want_status, "{body}");
            assert_eq!(body[key], value, "{body}");
            assert!(body["message"].is_string(), "{body}");
        }
        assert_eq!(statuses[0].1["error"], "parameter_validation_failed");
        assert_eq!(
            statuses[0].1["parameters_schema"],
            json!({"type": "object"})
        );
        assert_eq!(statuses[7].1["root_run_id"], "root");
    }
}
