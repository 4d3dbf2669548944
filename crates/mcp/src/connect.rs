//! Opening one connection to an MCP server: spawn (or dial), handshake, list tools,
//! and a watcher that notices when the server goes away.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{QuitReason, RunningServiceCancellationToken};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

use crate::auth::HttpAuth;
use crate::config::{McpServerConfig, McpTransportConfig};
use crate::error::McpError;

/// Lines of a server's stderr kept to explain its failures.
const STDERR_TAIL_LINES: usize = 5;
/// How long a stopping server may take to exit after stdin is closed (and again
/// after SIGTERM) before its process group is signalled.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// The last lines a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, joined with ` | `.
    pub(crate) fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

/// A live connection to one server.
pub(crate) struct Connection {
    /// Sends requests to the server.
    pub(crate) peer: Peer<RoleClient>,
    /// The child's pid (stdio servers); it leads its own process group.
    pub(crate) pid: Option<u32>,
    /// The tools the server listed at the handshake.
    pub(crate) tools: Vec<rmcp::model::Tool>,
    alive: Arc<AtomicBool>,
    stopping: Arc<AtomicBool>,
    cancel: Option<RunningServiceCancellationToken>,
    watcher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("pid", &self.pid)
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Whether the server is still connected.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst) && !self.peer.is_transport_closed()
    }

    /// Close the connection: stdin is closed so the server can exit; a server still
    /// running after a grace period gets SIGTERM, then SIGKILL (its whole process group).
    pub(crate) async fn stop(mut self) {
        // A server alive now leaves its process group to us: what it started (a
        // launcher's children, background helpers) may outlive it when it exits on
        // the closed stdin, so the group is killed at the end whatever the leader
        // did. A server that died earlier is not: its group id may be reused by now.
        let was_alive = self.alive.load(Ordering::SeqCst);
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(cancel) = self.cancel.take() {
            cancel.cancel();
        }
        if let Some(mut watcher) = self.watcher.take()
            && tokio::time::timeout(STOP_GRACE, &mut watcher)
                .await
                .is_err()
        {
            if let Some(pid) = self.pid {
                kill_group(pid, Signal::SIGTERM);
            }
            if tokio::time::timeout(STOP_GRACE, &mut watcher)
                .await
                .is_err()
            {
                tracing::warn!(pid = ?self.pid, "MCP server ignored SIGTERM; killing it");
            }
        }
        self.kill(Signal::SIGKILL);
        if was_alive && let Some(pid) = self.pid {
            kill_group(pid, Signal::SIGKILL);
        }
    }

    fn kill(&self, signal: Signal) {
        if let Some(pid) = self.pid
            && self.alive.swap(false, Ordering::SeqCst)
        {
            kill_group(pid, signal);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(cancel) = self.cancel.take() {
            cancel.cancel();
        }
        self.kill(Signal::SIGKILL);
    }
}

/// Kills a stdio server's whole process group (SIGKILL) when dropped while armed.
///
/// [`connect`] holds one from the spawn until it returns a [`Connection`], so a start
/// that fails (a broken handshake, a timeout, a failed `tools/list`) or is cancelled
/// (its future dropped, e.g. Ctrl-C during start-up) leaves nothing behind: rmcp's
/// transport kills only the direct child, and helpers the server started in its
/// group would survive it. Unlike [`Connection::stop`], it kills the group even when
/// the leader has died already: a start lasts seconds, far too little for the pid
/// space to wrap round, so the id is still this server's group (or nobody's).
struct GroupGuard(Option<u32>);

impl GroupGuard {
    /// The start succeeded: the [`Connection`] now owns the group.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_group(pid, Signal::SIGKILL);
        }
    }
}

/// Send `signal` to the process group led by `pid`.
pub(crate) fn kill_group(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid)
        && raw > 0
    {
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

/// Open a connection to `config`'s server, bounded by its `init_timeout_secs`.
/// `on_exit` is called with a reason if the server goes away before [`Connection::stop`].
/// Until it returns a connection, a failure or a cancellation kills a stdio server's
/// whole process group ([`GroupGuard`]).
/// An HTTP server gets `auth`'s headers and bearer token; every message of a failure is
/// redacted of them.
pub(crate) async fn connect(
    config: &McpServerConfig,
    auth: &HttpAuth,
    on_exit: impl FnOnce(String) + Send + 'static,
) -> Result<Connection, McpError> {
    let transport = config.transport()?;
    let stderr = StderrTail::default();
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("oxydra", env!("CARGO_PKG_VERSION")),
    );
    let server = config.name.clone();
    let init_timeout = config.init_timeout();
    let timeout_error = |stderr: &StderrTail| McpError::InitTimeout {
        server: server.clone(),
        secs: config.init_timeout_secs,
        stderr: stderr.text(),
    };

    let (service, pid, stderr_task, group) = match transport {
        McpTransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(&command);
            cmd.args(&args)
                .envs(&env)
                .kill_on_drop(true)
                .process_group(0);
            // Interpreter settings that would load code the configuration does not
            // name (a sibling module, a startup file) go, unless it sets them itself.
            for change in oxydra_tools::interpreter_env_changes(|name| env.contains_key(name)) {
                match change {
                    oxydra_tools::EnvChange::Remove(name) => {
                        cmd.env_remove(name);
                    }
                    oxydra_tools::EnvChange::Set(name, value) => {
                        cmd.env(name, value);
                    }
                }
            }
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let (child, child_stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|source| McpError::Spawn {
                    server: server.clone(),
                    command: command.clone(),
                    source,
                })?;
            let pid = child.id();
            let group = GroupGuard(pid);
            let stderr_task = child_stderr.map(|s| spawn_stderr_reader(&server, s, stderr.clone()));
            match tokio::time::timeout(init_timeout, client.serve(child)).await {
                Ok(Ok(service)) => (service, pid, stderr_task, group),
                Ok(Err(err)) => {
                    // Killed first: a helper holding the stderr pipe would keep the
                    // reader from seeing its end (what was written stays readable).
                    drop(group);
                    wait_for_stderr(stderr_task).await;
                    return Err(McpError::Handshake {
                        server,
                        message: handshake_message(&err.to_string()),
                        stderr: stderr.text(),
                    });
                }
                Err(_) => {
                    drop(group);
                    return Err(timeout_error(&stderr));
                }
            }
        }
        McpTransportConfig::StreamableHttp { url } => {
            // rmcp builds the client (with its same-origin redirect policy) and
            // reqwest's own TLS set-up, which needs a process default provider.
            oxydra_http::install_crypto_provider();
            let mut settings = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(auth.headers.clone());
            if let Some(token) = &auth.bearer {
                settings = settings.auth_header(token.as_str());
            }
            let transport = StreamableHttpClientTransport::from_config(settings);
            match tokio::time::timeout(init_timeout, client.serve(transport)).await {
                Ok(Ok(service)) => (service, None, None, GroupGuard(None)),
                Ok(Err(err)) => {
                    return Err(McpError::Handshake {
                        server,
                        message: auth.redact(&handshake_message(&err.to_string())),
                        stderr: String::new(),
                    });
                }
                Err(_) => return Err(timeout_error(&stderr)),
            }
        }
    };

    let peer = service.peer().clone();
    let alive = Arc::new(AtomicBool::new(true));
    let stopping = Arc::new(AtomicBool::new(false));
    let cancel = service.cancellation_token();
    let watcher = {
        let alive = Arc::clone(&alive);
        let stopping = Arc::clone(&stopping);
        let stderr = stderr.clone();
        tokio::spawn(async move {
            let quit = service.waiting().await;
            let was_alive = alive.swap(false, Ordering::SeqCst);
            if stopping.load(Ordering::SeqCst) {
                return;
            }
            wait_for_stderr(stderr_task).await;
            let mut reason = match quit {
                Ok(QuitReason::Closed) => "the server closed the connection".to_owned(),
                Ok(QuitReason::Cancelled) => "the connection was cancelled".to_owned(),
                Ok(QuitReason::JoinError(err)) | Err(err) => {
                    format!("the connection task failed: {err}")
                }
                Ok(_) => "the connection ended".to_owned(),
            };
            let tail = stderr.text();
            if !tail.is_empty() {
                reason.push_str("; server stderr: ");
                reason.push_str(&tail);
            }
            if was_alive {
                on_exit(reason);
            }
        })
    };
    let connection = Connection {
        peer,
        pid,
        tools: Vec::new(),
        alive,
        stopping,
        cancel: Some(cancel),
        watcher: Some(watcher),
    };

    let mut connection = connection;
    let tools = tokio::time::timeout(init_timeout, connection.peer.list_all_tools()).await;
    match tools {
        Ok(Ok(tools)) => {
            connection.tools = tools;
            group.disarm();
            Ok(connection)
        }
        Ok(Err(err)) => {
            connection.stop().await;
            Err(McpError::Request {
                server,
                request: "tools/list",
                message: auth.redact(&err.to_string()),
            })
        }
        Err(_) => {
            connection.stop().await;
            Err(timeout_error(&stderr))
        }
    }
}

/// Forward a server's stderr to `tracing` and keep its last lines.
fn spawn_stderr_reader(server: &str, stderr: ChildStderr, tail: StderrTail) -> JoinHandle<()> {
    let server = server.to_owned();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %server, "mcp server stderr: {line}");
            if !line.trim().is_empty() {
                tail.push(line);
            }
        }
    })
}

/// Give the stderr reader a moment to catch the server's last words.
async fn wait_for_stderr(task: Option<JoinHandle<()>>) {
    if let Some(task) = task {
        let _ = tokio::time::timeout(Duration::from_millis(200), task).await;
    }
}

/// A handshake failure as a person can act on it: a server that went away says so, and
/// the transport's internal type names (`Transport [rmcp::transport::…]`) are left out.
fn handshake_message(raw: &str) -> String {
    if raw.contains("connection closed") || raw.contains("Broken pipe") {
        return "the server closed the connection before answering the handshake \
                (is it an MCP server speaking on stdio?)"
            .to_owned();
    }
    let mut shown = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(start) = rest.find("[rmcp::") {
        shown.push_str(rest.get(..start).unwrap_or(""));
        rest = rest
            .get(start..)
            .and_then(|tail| tail.find(']').and_then(|end| tail.get(end + 1..)))
            .unwrap_or("");
    }
    shown.push_str(rest);
    shown.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod handshake_tests {
    use super::handshake_message;

    #[test]
    fn a_closed_connection_is_said_plainly() {
        let raw = "Send message error Transport [rmcp::transport::child_process::TokioChildProcess] error: Broken pipe (os error 32), when send initialize request";
        let shown = handshake_message(raw);
        assert!(shown.contains("closed the connection"), "{shown}");
        assert!(!shown.contains("rmcp::"), "{shown}");
    }

    #[test]
    fn transport_type_names_are_left_out() {
        assert_eq!(
            handshake_message("Transport [rmcp::a::B] error: bad frame [rmcp::c"),
            "Transport error: bad frame"
        );
        assert_eq!(handshake_message("plain failure"), "plain failure");
    }
}
