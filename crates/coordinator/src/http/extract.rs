//! Extractors whose every rejection is an [`ApiError`]: a JSON body (`400` for a
//! malformed or mis-shaped body, never axum's `422`; `413` past the body limit; the
//! content type is not checked, so `curl -d '{…}'` works as in seed 002) and a path
//! segment (`400` JSON, never axum's plain-text rejection, for `/runs/%FF`).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::errors::ApiError;

/// The request body parsed as JSON into `T`.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

/// The body limit in force, put into request extensions by the router.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimit(pub usize);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = request
            .extensions()
            .get::<BodyLimit>()
            .map_or(crate::config::DEFAULT_BODY_LIMIT, |limit| limit.0);
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::too_large(limit)
                } else {
                    ApiError::new(rejection.status(), "bad_request", rejection.body_text())
                }
            })?;
        match serde_json::from_slice::<T>(&bytes) {
            Ok(value) => Ok(Self(value)),
            Err(error) => Err(match error.classify() {
                serde_json::error::Category::Data => ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("the request body has the wrong shape: {error}"),
                ),
                _ => {
                    ApiError::malformed_json(format!("the request body is not valid JSON: {error}"))
                }
            }),
        }
    }
}

/// The one path parameter of a route (`/runs/{id}`), as text. A segment that is not
/// valid percent-encoded UTF-8 is a `400 invalid_path` JSON error.
#[derive(Debug, Clone)]
pub(crate) struct PathParam(pub String);

impl<S> FromRequestParts<S> for PathParam
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => {
                let status = rejection.status();
                let code = if status.is_client_error() {
                    "invalid_path"
                } else {
                    "internal"
                };
                Err(ApiError::new(status, code, rejection.body_text()))
            }
        }
    }
}
