//! The accept loop of the HTTP API: HTTP/1.1 on hyper, with the bounds a server
//! reachable before authentication needs (docs/coordinator.md, "Bounds"):
//!
//! - a connection cap that fits the file limit: at most `max_connections` connections
//!   are served at once, fewer when the soft `RLIMIT_NOFILE` minus the descriptors
//!   open at start and `fd_reserve` leaves less room
//!   ([`FdBudget`](super::fd_budget::FdBudget));
//! - shedding: with the cap full, a new connection displaces the oldest connection
//!   that was never authenticated and has no request in flight, taken from the peer
//!   holding the most of them ([`connections`](super::connections)); with none, the
//!   next connection waits in the kernel's accept queue until one ends; out of file
//!   descriptors all the same (`EMFILE`), one is shed the same way;
//! - a header timeout: a client that has begun a request must finish its headers
//!   within `header_read_timeout`, or the connection is closed;
//! - an idle timeout: a connection with no request in flight and no byte of the next
//!   one is closed after `idle_timeout` (a fresh connection included);
//! - the body timeout is the JSON extractor's (`body_read_timeout`, a `408`);
//! - `TCP_NODELAY` on every connection (small JSON answers go out at once).
//!
//! A request in flight (its handler running) is never cut by these timers, nor shed.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

use super::activity::{Activity, Authenticated, BusyGuard, Watched};
use super::connections::Connections;
use super::limits::ConnectionLimits;
use crate::error::CoordinatorError;

/// How long the accept loop waits after an error of the listener before it tries again
/// (or, out of file descriptors, for a shed connection to close).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then
/// stops accepting, lets requests in flight finish and closes idle connections.
pub async fn serve_bounded<F>(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: F,
) -> Result<(), CoordinatorError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let budget = limits.budget();
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(
            %addr,
            max_connections = budget.cap,
            configured = budget.configured,
            fd_limit = ?budget.fd_limit,
            fd_kept = budget.kept,
            "coordinator API listening"
        );
    }
    if budget.lowered() {
        tracing::warn!(
            max_connections = budget.cap,
            configured = budget.configured,
            fd_limit = ?budget.fd_limit,
            fd_kept = budget.kept,
            "the connection cap is lowered to fit the file limit (raise `ulimit -n`)"
        );
    }
    let connections = Connections::new(budget.cap);
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = connections.room() => {}
        }
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::warn!(%error, "cannot accept a connection");
                let open = connections.len();
                if is_out_of_descriptors(&error) && connections.shed_one() {
                    // Wait for the shed connection to close and free its descriptor.
                    let _ = tokio::time::timeout(ACCEPT_RETRY, connections.fewer_than(open)).await;
                } else {
                    // Wait a little instead of spinning on the same error.
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
                continue;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let activity = connections.activity();
        let admitted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            admitted = connections.admit(peer.ip(), &activity) => admitted,
        };
        let router = router.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            serve_connection(stream, router, limits, activity, stop).await;
            drop(admitted);
        });
    }
    stop.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// Errors of one connection that do not concern the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// `EMFILE` / `ENFILE`: the process or the system is out of file descriptors.
#[cfg(unix)]
fn is_out_of_descriptors(error: &io::Error) -> bool {
    use rustix::io::Errno;
    matches!(
        Errno::from_io_error(error),
        Some(Errno::MFILE | Errno::NFILE)
    )
}

/// Out of file descriptors: not told apart from other errors off Unix.
#[cfg(not(unix))]
fn is_out_of_descriptors(_error: &io::Error) -> bool {
    false
}

/// Serves one connection until it ends, a timer cuts it, it is shed or `stop` fires (then it
/// finishes the request in flight, if any, and closes; a connection with none, even
/// one halfway through sending headers, closes at once).
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: ConnectionLimits,
    activity: Arc<Activity>,
    stop: CancellationToken,
) {
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let busy = BusyGuard::begin(Arc::clone(&requests));
        let mut router = router.clone();
        let activity = Arc::clone(&requests);
        async move {
            let response = router.call(request).await;
            if let Ok(response) = &response
                && response.extensions().get::<Authenticated>().is_some()
            {
                activity.authenticate();
            }
            drop(busy);
            response
        }
    });
    let connection = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let watchdog = activity.watchdog(limits);
    tokio::pin!(watchdog);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
            return;
        }
        () = &mut watchdog => {
            tracing::debug!("closing a connection that sent nothing in time, or was shed");
            return;
        }
        () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        _ = connection => {}
        () = activity.until_not_busy() => {}
    }
}
