//! `POST /console/login`: the web console trades a one-time code (from the URL
//! `oxydra serve` prints, [`LoginCodes`]) for the bearer token. No token is needed to
//! call it, but the same `Host` / `Origin` / fetch-metadata guards as every route
//! apply, and its body must be JSON (so a page of another origin cannot send one
//! without a CORS preflight, which is never granted).

use std::sync::Arc;

use axum::extract::Extension;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::errors::ApiError;
use super::extract::JsonBody;
use crate::login_codes::{LoginCodes, LoginRefusal};

/// The body of `POST /console/login`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginBody {
    /// The code of the login URL (`#login=CODE`).
    code: String,
}

/// The answer to a good code.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct LoginToken {
    /// The bearer token to send with every API call.
    token: String,
}

/// `POST /console/login`.
#[utoipa::path(post, path = "/console/login", tag = "console",
    request_body(content = LoginBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The bearer token, once per code", body = LoginToken),
        (status = 400, description = "`malformed_json` or `invalid_request`", body = crate::api_schemas::ErrorBody),
        (status = 401, description = "`invalid_login_code`: unknown, already used or expired", body = crate::api_schemas::ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = crate::api_schemas::ErrorBody),
        (status = 429, description = "`login_locked`: too many wrong codes in the last minute (`Retry-After`)", body = crate::api_schemas::ErrorBody),
    ))]
pub(crate) async fn login(
    Extension(codes): Extension<Arc<LoginCodes>>,
    JsonBody(body): JsonBody<LoginBody>,
) -> Response {
    match codes.redeem(&body.code) {
        Ok(token) => {
            let mut response = axum::Json(LoginToken { token }).into_response();
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(LoginRefusal::Invalid) => {
            tracing::warn!("refused a console login code (unknown, used or expired)");
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_login_code",
                "the login code is unknown, already used or expired: restart `oxydra serve` \
                 for a new login URL, or enter the token",
            )
            .into_response()
        }
        Err(LoginRefusal::Locked { retry_after_ms }) => {
            let secs = retry_after_ms.saturating_add(999) / 1000;
            tracing::warn!(
                retry_after_secs = secs,
                "console login locked by wrong codes"
            );
            let mut response = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "login_locked",
                format!("too many wrong login codes: try again in {secs} s"),
            )
            .with("retry_after_secs", secs)
            .into_response();
            if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::Request;
    use axum::routing::post;
    use std::sync::atomic::{AtomicI64, Ordering};
    use tower::ServiceExt;

    fn router(codes: Arc<LoginCodes>) -> Router {
        Router::new()
            .route("/console/login", post(login))
            .layer(Extension(codes))
    }

    async fn post_code(router: &Router, body: &str) -> (StatusCode, serde_json::Value) {
        let response = router
            .clone()
            .oneshot(
                Request::post("/console/login")
                    .header("content-type", "application/json")
                    .body(Body::from(body.to_owned()))
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    fn clocked() -> (Arc<LoginCodes>, Arc<AtomicI64>) {
        let now = Arc::new(AtomicI64::new(5_000_000));
        let read = now.clone();
        let codes = LoginCodes::with_clock(
            Some("tok-123".into()),
            Arc::new(move || read.load(Ordering::SeqCst)),
        );
        (Arc::new(codes), now)
    }

    #[tokio::test]
    async fn a_code_gives_the_token_once_then_401() {
        let (codes, _) = clocked();
        let code = codes.issue().unwrap();
        let router = router(codes);
        let body = serde_json::json!({ "code": code }).to_string();
        let (status, answer) = post_code(&router, &body).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer, serde_json::json!({"token": "tok-123"}));
        let (status, answer) = post_code(&router, &body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer["error"], "invalid_login_code");
        assert!(!answer.to_string().contains("tok-123"));
    }

    #[tokio::test]
    async fn an_expired_or_wrong_code_is_401_and_bad_bodies_400() {
        let (codes, now) = clocked();
        let code = codes.issue().unwrap();
        let router = router(codes);
        let (status, answer) = post_code(&router, r#"{"code":"0123"}"#).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("invalid_login_code"))
        );
        now.fetch_add(600_000, Ordering::SeqCst);
        let body = serde_json::json!({ "code": code }).to_string();
        let (status, answer) = post_code(&router, &body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
        for bad in [
            "{}",
            r#"{"code": 5}"#,
            r#"{"code":"a","token":"b"}"#,
            "nope",
        ] {
            let (status, answer) = post_code(&router, bad).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {answer}");
        }
    }

    #[tokio::test]
    async fn wrong_codes_lock_the_login_with_429() {
        let (codes, _) = clocked();
        let code = codes.issue().unwrap();
        let router = router(codes);
        for _ in 0..crate::login_codes::MAX_LOGIN_FAILURES {
            let (status, _) = post_code(&router, r#"{"code":"guess"}"#).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        let body = serde_json::json!({ "code": code }).to_string();
        let (status, answer) = post_code(&router, &body).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(answer["error"], "login_locked");
        assert_eq!(answer["retry_after_secs"], 60);
    }
}
