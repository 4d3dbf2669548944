//! MCP's streamable HTTP transport, served at [`MCP_PATH`] with the guards of
//! `oxydra serve`: the coordinator's `Coordinator::guarded` (`Host` / `Origin`
//! checks, the bearer token, body size and time bounds) and its accept loop
//! `serve_bounded` (connection cap, header and idle timeouts).
//!
//! The transport is stateless: every POST carries one JSON-RPC message and is answered
//! with JSON, and the server keeps nothing per client between requests, so the only
//! memory a client holds is its connections, which the cap bounds. Runs live in the
//! coordinator, not in an MCP session: a client that disconnects mid-call leaves its run
//! going, readable by any later client.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use oxydra_coordinator::{ConnectionLimits, serve_bounded};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::McpServer;
use crate::error::McpServerError;

/// The path the transport is served at (the one MCP clients and docs assume).
pub const MCP_PATH: &str = "/mcp";

impl McpServer {
    /// Serves MCP's streamable HTTP at [`MCP_PATH`] on `listener` until `shutdown`
    /// completes; the calls in flight are then cancelled (a `get_agent_run` long poll
    /// ends at once) and their requests finish. The coordinator's guards apply as in
    /// `oxydra serve`: its `auth_token` as a bearer token, its `allowed_hosts` and
    /// `allowed_origins`, its body, connection and time bounds; bodies of up to
    /// [`max_message_bytes`](Self::max_message_bytes) are read.
    pub async fn serve_http<F>(
        self,
        listener: TcpListener,
        shutdown: F,
    ) -> Result<(), McpServerError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let coordinator = self.coordinator()?;
        let body_limit = self.max_message_bytes();
        let port = listener.local_addr().ok().map(|addr| addr.port());
        let stop = CancellationToken::new();
        let router = coordinator.guarded(routes(self, body_limit, stop.clone()), port, body_limit);
        let limits = ConnectionLimits::from_config(coordinator.config());
        let cancelling = {
            let stop = stop.clone();
            async move {
                shutdown.await;
                stop.cancel();
            }
        };
        let served = serve_bounded(listener, router, limits, cancelling).await;
        stop.cancel();
        Ok(served?)
    }
}

/// The MCP route. rmcp's own `Host` check is off: the coordinator's guard has already
/// made it (and, like `oxydra serve`, skips it for a client with the bearer token).
fn routes(server: McpServer, body_limit: usize, stop: CancellationToken) -> Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts();
    config.max_request_body_bytes = body_limit;
    config.cancellation_token = stop;
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new().route_service(MCP_PATH, service)
}
