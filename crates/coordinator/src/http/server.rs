//! The accept loop of the HTTP API: HTTP/1.1 on hyper, with the bounds a server
//! reachable before authentication needs (docs/coordinator.md, "Bounds"):
//!
//! - a connection cap: at most `max_connections` connections are served at once; the
//!   next one waits in the kernel's accept queue until one ends;
//! - a header timeout: a client that has begun a request must finish its headers
//!   within `header_read_timeout`, or the connection is closed;
//! - an idle timeout: a connection with no request in flight and no byte of the next
//!   one is closed after `idle_timeout` (a fresh connection included);
//! - the body timeout is the JSON extractor's (`body_read_timeout`, a `408`);
//! - `TCP_NODELAY` on every connection (small JSON answers go out at once).
//!
//! A request in flight (its handler running) is never cut by these timers.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

use crate::config::CoordinatorConfig;
use crate::error::CoordinatorError;

/// The connection bounds of [`serve_bounded`](crate::serve_bounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Longest a client may take to send a request's headers once it began.
    pub header_read_timeout: Duration,
    /// Longest a connection may stay open with nothing in flight.
    pub idle_timeout: Duration,
}

impl ConnectionLimits {
    /// The limits `config` sets.
    pub fn from_config(config: &CoordinatorConfig) -> Self {
        Self {
            max_connections: config.max_connections,
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
        }
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self::from_config(&CoordinatorConfig::default())
    }
}

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
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, max_connections = limits.max_connections, "coordinator API listening");
    }
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                // Out of file descriptors and the like: wait a little instead of
                // spinning on the same error.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let router = router.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            serve_connection(stream, router, limits, stop).await;
            drop(permit);
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

/// Serves one connection until it ends, a timer cuts it or `stop` fires (then it
/// finishes the request in flight, if any, and closes; a connection with none, even
/// one halfway through sending headers, closes at once).
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let busy = BusyGuard::begin(Arc::clone(&requests));
        let mut router = router.clone();
        async move {
            let response = router.call(request).await;
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
            tracing::debug!("closing a connection that sent nothing in time");
            return;
        }
        () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        _ = connection => {}
        () = activity.until_not_busy() => {}
    }
}

/// Where a connection is, for its timers.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in flight since `since`; `heard`: bytes of the next request came
    /// (at `since`), so its headers are being read.
    Waiting { since: Instant, heard: bool },
    /// This many requests in flight.
    Busy(usize),
}

/// A connection's phase and a signal of its changes.
#[derive(Debug)]
struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            phase: Mutex::new(Phase::Waiting {
                since: Instant::now(),
                heard: false,
            }),
            changed: Notify::new(),
        }
    }

    fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
        *phase = change(*phase);
        drop(phase);
        self.changed.notify_waiters();
    }

    /// Bytes came in: when waiting, the headers of a request are now being read.
    fn heard(&self) {
        let waiting = matches!(
            *self.phase.lock().unwrap_or_else(PoisonError::into_inner),
            Phase::Waiting { heard: false, .. }
        );
        if waiting {
            self.update(|phase| match phase {
                Phase::Waiting { heard: false, .. } => Phase::Waiting {
                    since: Instant::now(),
                    heard: true,
                },
                other => other,
            });
        }
    }

    /// When the connection must close if nothing changes; `None` while busy.
    fn deadline(&self, limits: ConnectionLimits) -> Option<Instant> {
        match *self.phase.lock().unwrap_or_else(PoisonError::into_inner) {
            Phase::Busy(_) => None,
            Phase::Waiting { since, heard: true } => Some(since + limits.header_read_timeout),
            Phase::Waiting {
                since,
                heard: false,
            } => Some(since + limits.idle_timeout),
        }
    }

    /// Completes once no request is in flight.
    async fn until_not_busy(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let busy = matches!(
                *self.phase.lock().unwrap_or_else(PoisonError::into_inner),
                Phase::Busy(_)
            );
            if !busy {
                return;
            }
            notified.await;
        }
    }

    /// Completes when the connection overstayed its phase's timer.
    async fn watchdog(&self, limits: ConnectionLimits) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.deadline(limits) {
                None => notified.await,
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }
}

/// Marks a request in flight for as long as it lives.
struct BusyGuard(Arc<Activity>);

impl BusyGuard {
    fn begin(activity: Arc<Activity>) -> Self {
        activity.update(|phase| match phase {
            Phase::Busy(count) => Phase::Busy(count + 1),
            Phase::Waiting { .. } => Phase::Busy(1),
        });
        Self(activity)
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.update(|phase| match phase {
            Phase::Busy(count) if count > 1 => Phase::Busy(count - 1),
            _ => Phase::Waiting {
                since: Instant::now(),
                heard: false,
            },
        });
    }
}

/// The connection's stream, telling its [`Activity`] when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.heard();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 1,
            header_read_timeout: Duration::from_millis(40),
            idle_timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn the_timer_follows_the_phase() {
        let activity = Arc::new(Activity::new());
        let idle = activity.deadline(limits()).unwrap();
        assert!(idle > Instant::now() + Duration::from_secs(4), "idle timer");
        activity.heard();
        let head = activity.deadline(limits()).unwrap();
        assert!(
            head < Instant::now() + Duration::from_secs(1),
            "header timer"
        );
        let first = BusyGuard::begin(Arc::clone(&activity));
        let second = BusyGuard::begin(Arc::clone(&activity));
        assert_eq!(activity.deadline(limits()), None);
        drop(first);
        assert_eq!(
            activity.deadline(limits()),
            None,
            "one request still in flight"
        );
        drop(second);
        let after = activity.deadline(limits()).unwrap();
        assert!(
            after > Instant::now() + Duration::from_secs(4),
            "idle again"
        );
        activity.heard();
        assert!(
            activity.deadline(limits()).unwrap() < after,
            "next request's headers"
        );
    }

    #[tokio::test]
    async fn the_watchdog_waits_out_a_busy_connection_and_cuts_slow_headers() {
        let activity = Arc::new(Activity::new());
        activity.heard();
        let busy = BusyGuard::begin(Arc::clone(&activity));
        let watchdog = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.watchdog(limits()).await }
        });
        // Far past the header timer: a request in flight is never cut.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!watchdog.is_finished());
        drop(busy);
        activity.heard();
        tokio::time::timeout(Duration::from_secs(5), watchdog)
            .await
            .expect("slow headers are cut")
            .unwrap();
    }
}
