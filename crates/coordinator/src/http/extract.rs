//! A JSON body extractor whose every rejection is an [`ApiError`]: `400` for a
//! malformed or mis-shaped body (never axum's `422`), `413` past the body limit.
//! The content type is not checked, so `curl -d '{…}'` works as in seed 002.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
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
