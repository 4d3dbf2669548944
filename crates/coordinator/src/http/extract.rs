//! Extractors whose every rejection is an [`ApiError`]: a JSON body, required or
//! optional ([`OptionalJsonBody`], `POST /runs/{id}/revert`) (`415` unless the
//! request says `Content-Type: application/json`, before the body is read; `400` for
//! a malformed or mis-shaped body, never axum's `422`; `413` past the body limit) and
//! a path segment (`400` JSON, never axum's plain-text rejection, for `/runs/%FF`).
//!
//! The content type is what keeps a web page from starting runs: a page may send a
//! cross-site `text/plain` or form body without asking the browser's permission
//! (no CORS preflight), but not an `application/json` one.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::errors::ApiError;

/// The request body parsed as JSON into `T`.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

/// The body limit in force, put into request extensions by the router.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimit(pub usize);

/// How long a body may take to arrive once its headers did, put into request
/// extensions by the router: a client that sends half a body is answered `408` and
/// its connection closed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyReadTimeout(pub std::time::Duration);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(request, state).await?;
        parse(&bytes).map(Self)
    }
}

/// A JSON body parsed into `T`, or `T::default()` when the body is empty. The
/// `Content-Type: application/json` rule of [`JsonBody`] holds all the same (an empty
/// body included): a web page cannot send it without asking the browser first.
#[derive(Debug, Clone)]
pub(crate) struct OptionalJsonBody<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Default,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = json_bytes(request, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        parse(&bytes).map(Self)
    }
}

/// The body of a request that says it is JSON, read within the limit and the timeout.
async fn json_bytes<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    check_json_content_type(request.headers())?;
    let limit = request
        .extensions()
        .get::<BodyLimit>()
        .map_or(crate::config::DEFAULT_BODY_LIMIT, |limit| limit.0);
    let timeout = request
        .extensions()
        .get::<BodyReadTimeout>()
        .map_or(crate::config::DEFAULT_BODY_READ_TIMEOUT, |timeout| {
            timeout.0
        });
    tokio::time::timeout(timeout, Bytes::from_request(request, state))
        .await
        .map_err(|_elapsed| ApiError::body_timeout(timeout))?
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::too_large(limit)
            } else {
                ApiError::new(rejection.status(), "bad_request", rejection.body_text())
            }
        })
}

/// `bytes` as JSON of `T`: `400 invalid_request` for the wrong shape,
/// `400 malformed_json` for what is not JSON.
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice::<T>(bytes).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("the request body has the wrong shape: {error}"),
        ),
        _ => ApiError::malformed_json(format!("the request body is not valid JSON: {error}")),
    })
}

/// `Ok` when the `Content-Type` is `application/json` (parameters such as
/// `; charset=utf-8` allowed), else `415 unsupported_media_type`.
fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let value = headers.get(header::CONTENT_TYPE);
    let text = value.and_then(|value| value.to_str().ok());
    let essence = text
        .and_then(|text| text.split(';').next())
        .map(str::trim)
        .unwrap_or_default();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    let shown = match (value, text) {
        (None, _) => "none".to_owned(),
        (Some(_), Some(text)) => format!("`{text}`"),
        (Some(_), None) => "an undecodable value".to_owned(),
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "the request body must be sent with `Content-Type: application/json`, found {shown}"
        ),
    )
    .with(
        "content_type",
        text.map_or(serde_json::Value::Null, Into::into),
    ))
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

/// The two path parameters of a route (`/runs/{id}/approvals/{approval_id}`), as
/// text; rejected like [`PathParam`].
#[derive(Debug, Clone)]
pub(crate) struct PathPair(pub String, pub String);

impl<S> FromRequestParts<S> for PathPair
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<(String, String)>::from_request_parts(parts, state).await {
            Ok(Path((first, second))) => Ok(Self(first, second)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(content_type: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = content_type {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_application_json_is_accepted() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            assert_eq!(check_json_content_type(&with(Some(ok))), Ok(()), "{ok}");
        }
        for refused in [
            Some("text/plain"),
            Some("text/plain; charset=utf-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonp"),
            Some("text/json"),
            Some(""),
            None,
        ] {
            let error = check_json_content_type(&with(refused)).unwrap_err();
            assert_eq!(
                error.status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{refused:?}"
            );
            assert_eq!(error.body["error"], "unsupported_media_type");
        }
    }
}
