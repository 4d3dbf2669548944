//! Routes of another protocol served behind the API's guards: `oxydra mcp serve
//! --listen` puts MCP's streamable HTTP transport here, so it has exactly the checks of
//! `oxydra serve` — the `Host` / `Origin` / `Sec-Fetch-Site` checks, the bearer token
//! when one is configured, a `500` JSON error for a panic — and, since such a protocol
//! reads its bodies itself, the body bounds of the API's JSON extractor: a body larger
//! than the limit is `413`, one that does not arrive within `body_read_timeout` is
//! `408`. Serve the router with [`serve_bounded`](super::serve_bounded) for the
//! connection cap and the header and idle timeouts.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::errors::ApiError;
use super::{auth, guard, outer_layers};
use crate::coordinator::Coordinator;

/// How much more than the limit is read (and dropped) before a `413` is sent, so that a
/// client still sending its body reads the answer instead of a reset connection.
const DRAIN_BYTES: usize = 16 * 1024 * 1024;

/// What a body may be: its largest size and the time it may take to arrive.
#[derive(Debug, Clone, Copy)]
struct BodyBounds {
    limit: usize,
    timeout: Duration,
}

impl Coordinator {
    /// `routes` behind the API's guards, for a listener bound to `port` (loopback
    /// origins of that port only; of any port when `None`): `Host` / `Origin` checks,
    /// the configured bearer token, and request bodies of at most `body_limit` bytes
    /// read within the configured `body_read_timeout` before a route sees them.
    pub fn guarded(&self, routes: Router, port: Option<u16>, body_limit: usize) -> Router {
        let bounds = BodyBounds {
            limit: body_limit,
            timeout: self.config().body_read_timeout(),
        };
        let router = routes.layer(axum::middleware::from_fn_with_state(bounds, read_body));
        let router = match &self.config().auth_token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(
                Arc::<str>::from(token.as_str()),
                auth::require_bearer,
            )),
            None => router,
        };
        let guard = Arc::new(guard::RequestGuard::new(self.config(), port));
        let router = router.layer(axum::middleware::from_fn_with_state(
            guard,
            guard::guard_request,
        ));
        outer_layers(router)
    }
}

/// Reads the whole body within the bounds and hands the route a request whose body is
/// in memory: a route never waits on a slow client, nor buffers more than the limit.
async fn read_body(State(bounds): State<BodyBounds>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let drain_limit = bounds.limit.saturating_add(DRAIN_BYTES);
    if declared.is_some_and(|length| length > u64::try_from(drain_limit).unwrap_or(u64::MAX)) {
        return ApiError::too_large(bounds.limit).into_response();
    }
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(bounds.timeout, collect(body, bounds.limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => return error.into_response(),
        Err(_elapsed) => return ApiError::body_timeout(bounds.timeout).into_response(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The body's bytes, or `413` once they pass `limit` (the rest of the body read and
/// dropped first, up to [`DRAIN_BYTES`] more: memory holds at most `limit`).
async fn collect(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut collected = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("the request body could not be read: {error}"),
            )
        })?;
        seen = seen.saturating_add(chunk.len());
        if seen > limit.saturating_add(DRAIN_BYTES) {
            return Err(ApiError::too_large(limit));
        }
        if seen <= limit {
            collected.extend_from_slice(&chunk);
        }
    }
    if seen > limit {
        return Err(ApiError::too_large(limit));
    }
    Ok(Bytes::from(collected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use tower::ServiceExt;

    fn echo() -> Router {
        let bounds = BodyBounds {
            limit: 8,
            timeout: Duration::from_millis(100),
        };
        Router::new()
            .route("/echo", post(|body: Bytes| async move { body }))
            .layer(axum::middleware::from_fn_with_state(bounds, read_body))
    }

    async fn post_body(body: Body, length: Option<&str>) -> (StatusCode, Bytes) {
        let mut request = axum::http::Request::post("/echo");
        if let Some(length) = length {
            request = request.header(header::CONTENT_LENGTH, length);
        }
        let response = echo().oneshot(request.body(body).unwrap()).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, bytes)
    }

    #[tokio::test]
    async fn a_body_within_the_limit_reaches_the_route_whole() {
        let (status, bytes) = post_body(Body::from("12345678"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(&bytes[..], b"12345678");
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_413_declared_or_not() {
        let (status, _) = post_body(Body::from("123456789"), None).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let far_past = (8 + DRAIN_BYTES + 1).to_string();
        let (status, bytes) = post_body(Body::empty(), Some(&far_past)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "refused unread");
        assert!(String::from_utf8_lossy(&bytes).contains("payload_too_large"));
    }

    #[tokio::test]
    async fn a_body_that_never_ends_is_408() {
        let endless = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from("1")) })
            .chain(futures::stream::pending());
        let (status, bytes) = post_body(Body::from_stream(endless), None).await;
        assert_eq!(status, StatusCode::REQUEST_TIMEOUT);
        assert!(String::from_utf8_lossy(&bytes).contains("request_timeout"));
    }
}
