//! Optional bearer-token authentication for every route.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::activity::Authenticated;
use super::errors::ApiError;
use crate::constant_time::constant_time_eq;

/// Refuses a request without `Authorization: Bearer <token>` with a `401` JSON error;
/// the response to one with it carries [`Authenticated`], so its connection is never
/// shed for a new one.
pub(crate) async fn require_bearer(
    State(token): State<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, credentials) = value.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| credentials.trim())
        });
    match presented {
        Some(credentials) if constant_time_eq(credentials.as_bytes(), token.as_bytes()) => {
            let mut response = next.run(request).await;
            response.extensions_mut().insert(Authenticated);
            response
        }
        _ => ApiError::unauthorized().into_response(),
    }
}
