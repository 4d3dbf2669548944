//! One MCP server: its connection, restarts with backoff, and tool calls with a
//! timeout and cancellation.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nix::sys::signal::Signal;
use oxydra_tools::{ToolContext, ToolError};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, JsonObject, RequestId, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio::time::Instant;

use crate::auth::HttpAuth;
use crate::config::McpServerConfig;
use crate::connect::{Connection, connect, kill_group};
use crate::error::McpError;
use crate::status::{ServerState, ServerStatus, ToolStatus};
use crate::tool_spec::{ToolSpec, tool_specs};

/// Longest pause between restart attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long sending a cancellation notification may take.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(1);

/// What `status()` reads without waiting for a call or a restart.
#[derive(Debug)]
struct Shared {
    state: ServerState,
    generation: u64,
    pid: Option<u32>,
    /// The process group of the current connection's child, kept until that
    /// connection has been stopped (unlike `pid`, which goes when stopping begins).
    group: Option<u32>,
    tools: Option<Vec<ToolSpec>>,
    stopped: bool,
    /// The credentials of the current connection (an HTTP server's), kept to redact
    /// them from every message about the server.
    auth: HttpAuth,
}

/// The connection and restart bookkeeping, locked while (re)starting.
#[derive(Debug, Default)]
struct Slot {
    conn: Option<Connection>,
    failed_rounds: u32,
    retry_at: Option<Instant>,
}

/// One configured server.
#[derive(Debug)]
pub(crate) struct McpServer {
    config: McpServerConfig,
    slot: tokio::sync::Mutex<Slot>,
    shared: Arc<Mutex<Shared>>,
}

impl McpServer {
    /// A server that is not started yet.
    pub(crate) fn new(config: McpServerConfig) -> Self {
        Self {
            config,
            slot: tokio::sync::Mutex::new(Slot::default()),
            shared: Arc::new(Mutex::new(Shared {
                state: ServerState::Failed {
                    reason: "not started".to_owned(),
                },
                generation: 0,
                pid: None,
                group: None,
                tools: None,
                stopped: false,
                auth: HttpAuth::default(),
            })),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// `text` without the server's credentials (its bearer token, its header values).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.shared().auth.redact(text)
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start the server (with the configured restart attempts).
    pub(crate) async fn start(&self) -> Result<(), McpError> {
        let mut slot = self.slot.lock().await;
        if slot.conn.as_ref().is_some_and(Connection::is_alive) {
            return Ok(());
        }
        self.restart(&mut slot).await.map(|_| ())
    }

    /// The tools the server listed the first time it started.
    pub(crate) fn tool_specs(&self) -> Vec<ToolSpec> {
        self.shared().tools.clone().unwrap_or_default()
    }

    /// The process group of a stdio server's child until it has been stopped, even
    /// while a shutdown is still under way.
    pub(crate) fn process_group(&self) -> Option<u32> {
        self.shared().group
    }

    /// The child's pid while a stdio server runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.shared().pid
    }

    /// The server as `oxydra mcp list` shows it.
    pub(crate) fn status(&self) -> ServerStatus {
        let shared = self.shared();
        ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.describe_transport(),
            state: shared.state.clone(),
            tools: shared
                .tools
                .iter()
                .flatten()
                .map(|spec| ToolStatus {
                    name: spec.registry_name.clone(),
                    mcp_name: spec.mcp_name.clone(),
                    tier: spec.tier,
                    description: spec.description.clone(),
                })
                .collect(),
        }
    }

    /// Stop the server and wait (a bounded time) for it to exit.
    pub(crate) async fn shutdown(&self) {
        self.mark_stopped();
        let conn = self.slot.lock().await.conn.take();
        if let Some(conn) = conn {
            conn.stop().await;
        }
        self.shared().group = None;
    }

    /// Stop the server now, without waiting (for `Drop`).
    pub(crate) fn kill_now(&self) {
        let pid = self.mark_stopped();
        match self.slot.try_lock() {
            Ok(mut slot) => drop(slot.conn.take()),
            Err(_) => {
                if let Some(pid) = pid {
                    kill_group(pid, Signal::SIGKILL);
                }
            }
        }
    }

    fn mark_stopped(&self) -> Option<u32> {
        let mut shared = self.shared();
        shared.stopped = true;
        shared.generation += 1;
        shared.state = ServerState::Stopped;
        shared.pid.take()
    }

    /// Pause before restart attempt `n + 1` (0-based doubling from `restart_backoff_ms`).
    fn backoff(&self, n: u32) -> Duration {
        let factor = 1u64.checked_shl(n).unwrap_or(u64::MAX);
        Duration::from_millis(self.config.restart_backoff_ms.saturating_mul(factor))
            .min(MAX_BACKOFF)
    }

    /// A live peer: the running connection, or a new one if the server died.
    async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        let mut slot = self.slot.lock().await;
        if self.shared().stopped {
            return Err(ToolError::Failed(format!(
                "MCP server `{}` has been shut down",
                self.config.name
            )));
        }
        if let Some(conn) = &slot.conn
            && conn.is_alive()
        {
            return Ok(conn.peer.clone());
        }
        self.restart(&mut slot)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))
    }

    /// Connect, making up to `restart_attempts` attempts with exponential backoff.
    /// After a failed round, further calls fail fast until a cool-down has passed.
    async fn restart(&self, slot: &mut Slot) -> Result<Peer<RoleClient>, McpError> {
        if let Some(old) = slot.conn.take() {
            old.stop().await;
        }
        if let Some(retry_at) = slot.retry_at {
            let now = Instant::now();
            if now < retry_at {
                let last = match &self.shared().state {
                    ServerState::Failed { reason } => reason.clone(),
                    other => other.to_string(),
                };
                return Err(McpError::Unavailable {
                    server: self.config.name.clone(),
                    reason: format!(
                        "{last} (next restart attempt in {:.1} s)",
                        (retry_at - now).as_secs_f64()
                    ),
                });
            }
        }
        let attempts = self.config.restart_attempts.max(1);
        let mut last_error = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(self.backoff(attempt - 1)).await;
            }
            match self.connect_once().await {
                Ok(conn) => {
                    slot.failed_rounds = 0;
                    slot.retry_at = None;
                    let peer = conn.peer.clone();
                    slot.conn = Some(conn);
                    return Ok(peer);
                }
                Err(err) => {
                    tracing::debug!(server = %self.config.name, attempt = attempt + 1, "MCP server failed to start: {err}");
                    // A command that is not there (or may not run) will not be there
                    // on the next attempt either.
                    let hopeless = matches!(
                        &err,
                        McpError::Spawn { source, .. }
                            if matches!(
                                source.kind(),
                                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                            )
                    );
                    last_error = Some(err);
                    if hopeless {
                        break;
                    }
                }
            }
        }
        slot.failed_rounds = slot.failed_rounds.saturating_add(1);
        let cool_down = self.backoff(attempts.saturating_add(slot.failed_rounds));
        slot.retry_at = Some(Instant::now() + cool_down);
        let reason = match last_error {
            Some(err) => err.to_string(),
            None => "no start attempt was made".to_owned(),
        };
        {
            let mut shared = self.shared();
            if !shared.stopped {
                shared.state = ServerState::Failed {
                    reason: reason.clone(),
                };
            }
        }
        Err(McpError::Unavailable {
            server: self.config.name.clone(),
            reason: format!(
                "{reason} (gave up after {attempts} attempt(s); next try in {:.1} s)",
                cool_down.as_secs_f64()
            ),
        })
    }

    /// One connection attempt; on success the shared state says `running`.
    async fn connect_once(&self) -> Result<Connection, McpError> {
        let generation = {
            let mut shared = self.shared();
            if shared.stopped {
                return Err(McpError::Unavailable {
                    server: self.config.name.clone(),
                    reason: "it has been shut down".to_owned(),
                });
            }
            shared.generation += 1;
            shared.generation
        };
        let auth = if self.config.url.is_some() {
            HttpAuth::resolve(&self.config, |var| std::env::var(var).ok())?
        } else {
            HttpAuth::default()
        };
        self.shared().auth = auth.clone();
        let watched = Arc::clone(&self.shared);
        let name = self.config.name.clone();
        let conn = connect(&self.config, &auth, move |reason| {
            let mut shared = watched.lock().unwrap_or_else(PoisonError::into_inner);
            let reason = shared.auth.redact(&reason);
            if shared.generation == generation && !shared.stopped {
                tracing::warn!(server = %name, "MCP server went away: {reason}");
                shared.state = ServerState::Failed {
                    reason: format!("{reason}; it is restarted on the next call"),
                };
                shared.pid = None;
            }
        })
        .await?;
        tracing::info!(server = %self.config.name, pid = ?conn.pid, tools = conn.tools.len(), "MCP server started");
        let mut shared = self.shared();
        if shared.generation == generation && conn.is_alive() {
            shared.state = ServerState::Running;
            shared.pid = conn.pid;
            shared.group = conn.pid;
        }
        match &shared.tools {
            None => shared.tools = Some(tool_specs(&self.config, &conn.tools)),
            Some(known) => {
                let now = tool_specs(&self.config, &conn.tools);
                if now
                    .iter()
                    .map(|s| &s.mcp_name)
                    .ne(known.iter().map(|s| &s.mcp_name))
                {
                    tracing::warn!(server = %self.config.name, "MCP server's tools changed after a restart; the registered tools stay as they were");
                }
            }
        }
        Ok(conn)
    }

    /// The limit on one call (`call_timeout_secs`).
    pub(crate) fn call_timeout(&self) -> Duration {
        self.config.call_timeout()
    }

    /// Call the server's tool `mcp_name`, bounded by `call_timeout_secs` and `ctx.cancel`.
    /// Cancelling or timing out sends the MCP cancellation notification.
    pub(crate) async fn call(
        &self,
        mcp_name: &str,
        arguments: Option<JsonObject>,
        ctx: &ToolContext,
    ) -> Result<CallToolResult, ToolError> {
        let limit = self.config.call_timeout();
        let deadline = Instant::now() + limit;
        let timed_out = || ToolError::Timeout {
            secs: self.config.call_timeout_secs,
        };
        let send = async {
            let mut retried = false;
            loop {
                let peer = self.peer().await?;
                let params = call_params(mcp_name, arguments.clone(), ctx.idempotency_key());
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                match peer
                    .send_request_with_option(request, PeerRequestOptions::no_options())
                    .await
                {
                    Ok(handle) => return Ok(handle),
                    // The request never reached the server: safe to restart and resend once.
                    Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                        if !retried =>
                    {
                        retried = true;
                    }
                    Err(err) => return Err(self.call_error(mcp_name, err)),
                }
            }
        };
        let handle = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep_until(deadline) => return Err(timed_out()),
            handle = send => handle?,
        };
        // The executor drops a tool's future when the run is cancelled or its own
        // per-call limit fires, and then this select never sees the cancellation: the
        // guard tells the server about a call dropped unanswered.
        let mut in_flight = InFlight {
            call: Some((handle.peer.clone(), handle.id.clone())),
        };
        let ended = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => Ended::Cancelled,
            () = tokio::time::sleep_until(deadline) => Ended::TimedOut,
            response = handle.await_response() => Ended::Answered(Box::new(response)),
        };
        match ended {
            Ended::Cancelled => {
                in_flight.notify("cancelled by the caller").await;
                Err(ToolError::Cancelled)
            }
            Ended::TimedOut => {
                in_flight.notify("timed out").await;
                Err(timed_out())
            }
            Ended::Answered(response) => {
                in_flight.call = None;
                self.answer(mcp_name, *response)
            }
        }
    }

    fn answer(
        &self,
        mcp_name: &str,
        response: Result<ServerResult, ServiceError>,
    ) -> Result<CallToolResult, ToolError> {
        match response {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            Ok(_) => Err(ToolError::Failed(format!(
                "MCP server `{}` answered the call to `{mcp_name}` with an unexpected result",
                self.config.name
            ))),
            Err(err) => Err(self.call_error(mcp_name, err)),
        }
    }

    fn call_error(&self, mcp_name: &str, err: ServiceError) -> ToolError {
        let server = &self.config.name;
        let message = match err {
            ServiceError::McpError(data) => format!(
                "MCP server `{server}` rejected the call to `{mcp_name}`: {} (code {})",
                data.message, data.code.0
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
                "MCP server `{server}` went away during the call to `{mcp_name}`; \
                 it is restarted on the next call"
            ),
            other => format!("MCP server `{server}`: the call to `{mcp_name}` failed: {other}"),
        };
        ToolError::Failed(self.redact(&message))
    }
}

/// How waiting for a call's answer ended.
enum Ended {
    Cancelled,
    TimedOut,
    Answered(Box<Result<ServerResult, ServiceError>>),
}

/// A call the server is working on. Dropped while it still holds the call (the caller
/// dropped its future mid-call), it sends the MCP cancellation from a spawned task.
struct InFlight {
    call: Option<(Peer<RoleClient>, RequestId)>,
}

impl InFlight {
    /// Sends the cancellation now; the guard is then spent.
    async fn notify(&mut self, reason: &str) {
        if let Some((peer, id)) = self.call.take() {
            notify_cancelled(&peer, id, reason).await;
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.call.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                notify_cancelled(&peer, id, "abandoned by the caller").await;
            });
        }
    }
}

async fn notify_cancelled(peer: &Peer<RoleClient>, id: RequestId, reason: &str) {
    let param = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let _ = tokio::time::timeout(NOTIFY_TIMEOUT, peer.notify_cancelled(param)).await;
}

/// The `_meta` key a call's idempotency key travels under (MCP reserves unprefixed
/// and `modelcontextprotocol`/`mcp` prefixes; this one is ours).
pub(crate) const IDEMPOTENCY_META_KEY: &str = "oxydra/idempotencyKey";

/// The `tools/call` params of `mcp_name` with `arguments`; with the call's idempotency
/// key in `_meta` (as [`IDEMPOTENCY_META_KEY`]) when it has one, so that a server can
/// recognise a call repeated after a crash.
fn call_params(
    mcp_name: &str,
    arguments: Option<JsonObject>,
    idempotency_key: Option<&str>,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(mcp_name.to_owned());
    params.arguments = arguments;
    if let Some(key) = idempotency_key {
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.0.0.insert(
            IDEMPOTENCY_META_KEY.to_owned(),
            serde_json::Value::from(key),
        );
        params.meta = Some(meta);
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_idempotency_key_travels_in_meta() {
        let mut arguments = JsonObject::new();
        arguments.insert("to".to_owned(), serde_json::json!("ops@example.com"));
        let params = call_params("send", Some(arguments), Some("oxk-0123"));
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["_meta"]["oxydra/idempotencyKey"], "oxk-0123", "{wire}");
        assert_eq!(wire["arguments"]["to"], "ops@example.com");
        assert_eq!(wire["name"], "send");
    }

    #[test]
    fn a_call_without_a_key_sends_no_meta() {
        let wire = serde_json::to_value(call_params("list", None, None)).unwrap();
        assert!(wire.get("_meta").is_none(), "{wire}");
    }
}
