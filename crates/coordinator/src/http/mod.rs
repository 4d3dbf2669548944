//! The HTTP API (DESIGN.md §3.3) on axum: `GET /agents`, `POST /runs`,
//! `GET /runs/{id}`, `DELETE /runs/{id}`, a body size limit, JSON errors for every
//! failure, optional bearer auth and graceful shutdown.

mod auth;
mod errors;
mod extract;
mod routes;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::trace::TraceLayer;

use crate::coordinator::Coordinator;
use crate::error::CoordinatorError;

pub use errors::ApiError;
pub use extract::JsonBody;

impl Coordinator {
    /// The API's router, with the body limit, JSON fallbacks and (when a token is
    /// configured) bearer auth on every route.
    pub fn router(&self) -> Router {
        let limit = self.config().body_limit_bytes;
        let router = Router::new()
            .route("/agents", get(routes::list_agents))
            .route("/runs", post(routes::create_run))
            .route(
                "/runs/{id}",
                get(routes::get_run).delete(routes::cancel_run),
            )
            .fallback(errors::route_not_found)
            .method_not_allowed_fallback(errors::method_not_allowed)
            .with_state(self.clone())
            .layer(DefaultBodyLimit::max(limit))
            .layer(axum::Extension(extract::BodyLimit(limit)));
        let router = match &self.config().auth_token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(
                Arc::<str>::from(token.as_str()),
                auth::require_bearer,
            )),
            None => router,
        };
        router.layer(TraceLayer::new_for_http())
    }

    /// Serves the API on `listener` until `shutdown` completes (in-flight requests
    /// finish), then shuts the coordinator down: active runs end `failed` /
    /// `interrupted`.
    pub async fn serve<F>(&self, listener: TcpListener, shutdown: F) -> Result<(), CoordinatorError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let served = serve(listener, self.router(), shutdown).await;
        self.shutdown().await;
        served
    }
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    shutdown: F,
) -> Result<(), CoordinatorError>
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "coordinator API listening");
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| CoordinatorError::Io {
            action: "serving the coordinator API",
            source,
        })
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
