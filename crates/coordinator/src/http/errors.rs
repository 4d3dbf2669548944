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
    fn from(error: CoordinatorError) -> Self {
        let message = error.to_string();
        match error {
            CoordinatorError::InvalidParameters(failure) => Self {
                status: StatusCode::BAD_REQUEST,
                body: serde_json::to_value(*failure).unwrap_or_else(
                    |_| json!({"error": "parameter_validation_failed", "message": message}),
                ),
            },
            CoordinatorError::AgentNotFound { name, available } => {
                Self::new(StatusCode::NOT_FOUND, "agent_not_found", message)
                    .with("agent_name", name)
                    .with("available_agents", available)
            }
            CoordinatorError::RunNotFound { run_id } => {
                Self::new(StatusCode::NOT_FOUND, "run_not_found", message).with("run_id", run_id)
            }
            CoordinatorError::NotCancellable { run_id, status } => {
                Self::new(StatusCode::CONFLICT, "run_not_cancellable", message)
                    .with("run_id", run_id)
                    .with("status", status.as_str())
            }
            CoordinatorError::ApprovalNotFound {
                run_id,
                approval_id,
            } => Self::new(StatusCode::NOT_FOUND, "approval_not_found", message)
                .with("run_id", run_id)
                .with("approval_id", approval_id),
            CoordinatorError::ApprovalAlreadyDecided {
                run_id,
                approval_id,
            } => Self::new(StatusCode::CONFLICT, "approval_already_decided", message)
                .with("run_id", run_id)
                .with("approval_id", approval_id),
            CoordinatorError::NotWaitingApproval { run_id, status } => {
                Self::new(StatusCode::CONFLICT, "run_not_waiting_approval", message)
                    .with("run_id", run_id)
                    .with("status", status.as_str())
            }
            CoordinatorError::RunTreeLimit {
                bound, root_run_id, ..
            } => Self::new(StatusCode::TOO_MANY_REQUESTS, "run_tree_limit", message)
                .with("bound", bound.as_str())
                .with("root_run_id", root_run_id),
            CoordinatorError::ShuttingDown => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", message)
            }
            other => {
                tracing::error!(error = %other, "coordinator request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
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
