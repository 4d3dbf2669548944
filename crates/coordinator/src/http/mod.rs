//! The HTTP API on axum: `GET /agents`, `POST /runs`, `GET /runs` ([`listing`]),
//! `GET /runs/{id}`, `DELETE /runs/{id}`, `GET /runs/{id}/events` ([`events`]),
//! `POST /runs/{id}/approvals/{approval_id}`, `GET /runs/{id}/changes`, `POST
//! /runs/{id}/revert` ([`crate::run_changes`]), `GET /approvals`, `GET /openapi.json`
//! ([`openapi`]: every route is added with its OpenAPI operation), the web console at
//! `/` when configured ([`console`], its one-time login [`login`]), a body size limit, JSON bodies only (`415` otherwise), JSON
//! errors for every failure (a panicking handler included: `500` JSON), `Host` /
//! `Origin` checks against web pages, optional bearer auth, graceful shutdown, and
//! the bounds of a server reachable before authentication: header, body and idle
//! timeouts and a connection cap that fits the file limit and sheds unauthenticated
//! idle connections for new ones ([`server`], [`connections`], [`fd_budget`]). Another protocol's routes get the same
//! guards with [`Coordinator::guarded`] ([`guarded`]).

mod activity;
mod auth;
mod connections;
mod console;
mod errors;
mod events;
mod extract;
mod fd_budget;
mod guard;
mod guarded;
mod limits;
mod listing;
mod login;
mod openapi;
mod routes;
mod server;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
#[cfg(test)]
use axum::routing::get;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;

pub use errors::ApiError;
pub use extract::JsonBody;
pub use fd_budget::{
    FD_RESERVE_FIXED, FD_RESERVE_PER_RUN, FdBudget, FdLimitRaise, fd_reserve, raise_fd_limit,
};
pub use limits::ConnectionLimits;
pub use server::serve_bounded;

impl Coordinator {
    /// The API's router, with the body limit, JSON fallbacks, the `Host` / `Origin`
    /// checks and (when a token is configured) bearer auth on every route. Loopback
    /// origins of any port are accepted; [`Coordinator::serve`] accepts only those of
    /// the port it listens on.
    pub fn router(&self) -> Router {
        self.router_on(None)
    }

    /// Every route of the API with its OpenAPI operation: the one place routes are
    /// added (`routes!` adds a handler to the router and its `#[utoipa::path]` to the
    /// document together).
    fn api_routes() -> OpenApiRouter<Coordinator> {
        OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
            .routes(routes!(routes::list_agents))
            .routes(routes!(routes::create_run, listing::list_runs))
            .routes(routes!(routes::get_run, routes::cancel_run))
            .routes(routes!(events::run_events))
            .routes(routes!(routes::run_changes))
            .routes(routes!(routes::revert_run))
            .routes(routes!(routes::decide_approval))
            .routes(routes!(listing::list_approvals))
            .routes(routes!(openapi::openapi_json))
    }

    /// The web console's routes (`GET /`, its script and style sheet, and `POST
    /// /console/login`, which trades a one-time code for the token): served without
    /// the token (the assets hold no data; the login needs its code), behind the same
    /// `Host` / `Origin` guards.
    fn console_routes() -> OpenApiRouter<Coordinator> {
        OpenApiRouter::new()
            .routes(routes!(console::index))
            .routes(routes!(console::script))
            .routes(routes!(console::style))
            .routes(routes!(login::login))
    }

    /// The routers of this coordinator (the API's; the console's when
    /// [`CoordinatorConfig::console`](crate::CoordinatorConfig::console) is on) and the
    /// OpenAPI document of both.
    fn routers(
        &self,
    ) -> (
        Router<Coordinator>,
        Option<Router<Coordinator>>,
        serde_json::Value,
    ) {
        let (api, mut document) = Self::api_routes().split_for_parts();
        let console = self.config().console.then(|| {
            let (console, paths) = Self::console_routes().split_for_parts();
            document.merge(paths);
            console
        });
        let document = serde_json::to_value(&document).unwrap_or_default();
        (api, console, document)
    }

    /// The OpenAPI document of the API as this coordinator serves it (what `GET
    /// /openapi.json` answers): every route of its router.
    pub fn openapi(&self) -> serde_json::Value {
        self.routers().2
    }

    /// The router for a listener on `port`.
    fn router_on(&self, port: Option<u16>) -> Router {
        let limit = self.config().body_limit_bytes;
        let (router, console, document) = self.routers();
        let document = openapi::Document(Arc::new(document));
        let router = router
            .layer(axum::Extension(document))
            .fallback(errors::route_not_found)
            .method_not_allowed_fallback(errors::method_not_allowed)
            .with_state(self.clone())
            .layer(DefaultBodyLimit::max(limit))
            .layer(axum::Extension(extract::BodyLimit(limit)))
            .layer(axum::Extension(extract::BodyReadTimeout(
                self.config().body_read_timeout(),
            )));
        let router = match &self.config().auth_token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(
                Arc::<str>::from(token.as_str()),
                auth::require_bearer,
            )),
            None => router,
        };
        let guard = Arc::new(guard::RequestGuard::new(self.config(), port));
        let router = match console {
            Some(console) => router.merge(
                console
                    .with_state(self.clone())
                    .layer(axum::middleware::from_fn_with_state(
                        guard.clone(),
                        guard::guard_console_host,
                    ))
                    .layer(axum::Extension(self.inner.login.clone()))
                    .layer(DefaultBodyLimit::max(limit))
                    .layer(axum::Extension(extract::BodyLimit(limit)))
                    .layer(axum::Extension(extract::BodyReadTimeout(
                        self.config().body_read_timeout(),
                    ))),
            ),
            None => router,
        };
        let router = router.layer(axum::middleware::from_fn_with_state(
            guard,
            guard::guard_request,
        ));
        outer_layers(router)
    }

    /// Serves the API on `listener` within the configured connection bounds
    /// ([`ConnectionLimits::from_config`], the cap fitted to the file limit) until `shutdown` completes (in-flight
    /// requests finish), then shuts the coordinator down: active runs end `failed` /
    /// `interrupted`.
    pub async fn serve<F>(&self, listener: TcpListener, shutdown: F) -> Result<(), CoordinatorError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let port = listener.local_addr().ok().map(|addr| addr.port());
        let limits = ConnectionLimits::from_config(self.config());
        let served = serve_bounded(listener, self.router_on(port), limits, shutdown).await;
        self.shutdown().await;
        served
    }
}

/// The layers around every route: a panic becomes a `500` JSON error (inside the
/// trace layer, so the trace records the 500).
fn outer_layers(router: Router) -> Router {
    router
        .layer(CatchPanicLayer::custom(errors::panic_response))
        .layer(TraceLayer::new_for_http())
}

/// Serves `router` on `listener` until `shutdown` completes, within the default
/// [`ConnectionLimits`] (see [`serve_bounded`] to choose them).
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    shutdown: F,
) -> Result<(), CoordinatorError>
where
    F: Future<Output = ()> + Send + 'static,
{
    serve_bounded(listener, router, ConnectionLimits::default(), shutdown).await
}

/// Completes on Ctrl-C or (on Unix) SIGTERM: pass it to [`Coordinator::serve`].
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    async fn call(router: Router, uri: &str) -> (StatusCode, serde_json::Value) {
        let response = router
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("{status}: not JSON: {bytes:?}"));
        (status, body)
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_json_without_the_panic_message() {
        async fn boom() -> &'static str {
            panic!("secret detail api_key=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e");
        }
        let router = outer_layers(Router::new().route("/boom", get(boom)));
        let (status, body) = call(router, "/boom").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["error"], "internal");
        assert!(!body.to_string().contains("secret detail"), "{body}");
    }

    #[tokio::test]
    async fn an_undecodable_path_segment_is_400_json() {
        let router = Router::new().route(
            "/runs/{id}",
            get(|extract::PathParam(id): extract::PathParam| async move { id }),
        );
        let (status, body) = call(router, "/runs/%FF").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"], "invalid_path");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
}
