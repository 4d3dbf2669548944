//! Where one connection is, for its timers and for shedding: waiting for a request
//! (and whether bytes of it came), serving requests, or shed; and whether a request
//! of it was authenticated.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::limits::ConnectionLimits;

/// A response extension: the request passed bearer authentication. Its connection is
/// never shed for a new one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authenticated;

/// Where a connection is, for its timers.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in flight since `since`; `heard`: bytes of the next request came
    /// (at `since`), so its headers are being read.
    Waiting { since: Instant, heard: bool },
    /// This many requests in flight.
    Busy(usize),
    /// Shed for a newer connection: it closes at once.
    Shed,
}

/// A connection's phase and signals of its changes.
#[derive(Debug)]
pub(super) struct Activity {
    phase: Mutex<Phase>,
    /// Set once a response of it carried [`Authenticated`] (before that request ends).
    authenticated: AtomicBool,
    /// This connection's timers wait on it.
    changed: Notify,
    /// The accept loop waits on it (shared by every connection): a connection that
    /// stops being busy may be shed.
    room: Arc<Notify>,
}

impl Activity {
    /// A fresh connection: waiting, nothing heard; `room` is told of its changes.
    pub(super) fn new(room: Arc<Notify>) -> Self {
        Self {
            phase: Mutex::new(Phase::Waiting {
                since: Instant::now(),
                heard: false,
            }),
            authenticated: AtomicBool::new(false),
            changed: Notify::new(),
            room,
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase();
        *phase = change(*phase);
        drop(phase);
        self.changed.notify_waiters();
        self.room.notify_waiters();
    }

    /// Bytes came in: when waiting, the headers of a request are now being read.
    pub(super) fn heard(&self) {
        let waiting = matches!(*self.phase(), Phase::Waiting { heard: false, .. });
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

    /// Moves the start of its wait `by` into the past (tests of shedding without
    /// waiting out [`SHED_GRACE`]).
    #[cfg(test)]
    pub(super) fn waited(&self, by: Duration) {
        let mut phase = self.phase();
        if let Phase::Waiting { since, heard } = *phase {
            *phase = Phase::Waiting {
                since: since.checked_sub(by).unwrap_or(since),
                heard,
            };
        }
    }

    /// A request of this connection passed authentication.
    pub(super) fn authenticate(&self) {
        self.authenticated.store(true, Ordering::SeqCst);
    }

    /// When it may be shed for a new connection if nothing changes: never while it
    /// was authenticated, has a request in flight or was shed already; else
    /// [`SHED_GRACE`] after it began to wait (accepted, its last request ended, or the
    /// first bytes of its next request came).
    pub(super) fn sheddable_at(&self) -> Option<Instant> {
        if self.authenticated.load(Ordering::SeqCst) {
            return None;
        }
        sheddable_at(*self.phase())
    }

    /// Whether it was shed.
    pub(super) fn is_shed(&self) -> bool {
        matches!(*self.phase(), Phase::Shed)
    }

    /// Whether it may be shed for a new connection now ([`Activity::sheddable_at`]).
    #[cfg(test)]
    pub(super) fn sheddable(&self) -> bool {
        self.sheddable_at().is_some_and(|at| at <= Instant::now())
    }

    /// Sheds it if it may be shed now ([`Activity::sheddable_at`]): its watchdog fires
    /// at once. Whether it was.
    pub(super) fn shed(&self) -> bool {
        let mut phase = self.phase();
        let shed = !self.authenticated.load(Ordering::SeqCst)
            && sheddable_at(*phase).is_some_and(|at| at <= Instant::now());
        if shed {
            *phase = Phase::Shed;
            drop(phase);
            self.changed.notify_waiters();
        }
        shed
    }

    /// When the connection must close if nothing changes; `None` while busy.
    fn deadline(&self, limits: ConnectionLimits) -> Option<Instant> {
        match *self.phase() {
            Phase::Busy(_) => None,
            Phase::Shed => Some(Instant::now()),
            Phase::Waiting { since, heard: true } => Some(since + limits.header_read_timeout),
            Phase::Waiting {
                since,
                heard: false,
            } => Some(since + limits.idle_timeout),
        }
    }

    /// Completes once no request is in flight.
    pub(super) async fn until_not_busy(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !matches!(*self.phase(), Phase::Busy(_)) {
                return;
            }
            notified.await;
        }
    }

    /// Completes when the connection overstayed its phase's timer, or was shed.
    pub(super) async fn watchdog(&self, limits: ConnectionLimits) {
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

/// How long a connection without a request in flight waits before it may be shed. A
/// client that connects and sends its request at once has done all it should, yet the
/// server can look at the connection before its bytes come, or between reading them
/// and starting the request (a burst of clients, a loaded machine, the connections'
/// tasks on other threads): shedding such connections at once closed complete requests
/// unanswered under 1,000 concurrent `POST /runs` (issue 50.2; `tests/it/burst.rs`).
/// A slow client is still shed, a second later.
pub(super) const SHED_GRACE: Duration = Duration::from_secs(1);

/// [`Activity::sheddable_at`] of a phase, authentication aside.
fn sheddable_at(phase: Phase) -> Option<Instant> {
    match phase {
        Phase::Waiting { since, .. } => Some(since + SHED_GRACE),
        Phase::Busy(_) | Phase::Shed => None,
    }
}

/// Marks a request in flight for as long as it lives.
pub(super) struct BusyGuard(Arc<Activity>);

impl BusyGuard {
    /// A request of `activity`'s connection began.
    pub(super) fn begin(activity: Arc<Activity>) -> Self {
        activity.update(|phase| match phase {
            Phase::Busy(count) => Phase::Busy(count + 1),
            Phase::Waiting { .. } => Phase::Busy(1),
            Phase::Shed => Phase::Shed,
        });
        Self(activity)
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.update(|phase| match phase {
            Phase::Busy(count) if count > 1 => Phase::Busy(count - 1),
            Phase::Shed => Phase::Shed,
            _ => Phase::Waiting {
                since: Instant::now(),
                heard: false,
            },
        });
    }
}

/// The connection's stream, telling its [`Activity`] when bytes arrive.
pub(super) struct Watched {
    /// The stream.
    pub(super) inner: TcpStream,
    /// Its connection's activity.
    pub(super) activity: Arc<Activity>,
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
    use std::time::Duration;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 1,
            header_read_timeout: Duration::from_millis(40),
            idle_timeout: Duration::from_secs(5),
            fd_reserve: 0,
        }
    }

    fn activity() -> Arc<Activity> {
        Arc::new(Activity::new(Arc::new(Notify::new())))
    }

    #[test]
    fn the_timer_follows_the_phase() {
        let activity = activity();
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
        let activity = activity();
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

    #[test]
    fn a_silent_connection_is_shed_only_after_the_grace() {
        let fresh = activity();
        assert!(
            !fresh.sheddable() && !fresh.shed(),
            "its request may be on the way"
        );
        let at = fresh.sheddable_at().unwrap();
        assert!(at > Instant::now() && at <= Instant::now() + SHED_GRACE);
        fresh.heard();
        assert!(
            !fresh.sheddable(),
            "its first bytes came: the grace starts again"
        );
        fresh.waited(SHED_GRACE);
        assert!(
            fresh.sheddable(),
            "half its headers, then nothing: it may be shed"
        );
        assert!(fresh.shed());
    }

    #[test]
    fn only_an_unauthenticated_connection_without_a_request_in_flight_is_shed() {
        let waiting = activity();
        waiting.heard();
        waiting.waited(SHED_GRACE);
        assert!(waiting.sheddable(), "half-sent headers");
        let busy = activity();
        let request = BusyGuard::begin(Arc::clone(&busy));
        assert!(!busy.shed(), "a request in flight");
        busy.authenticate();
        drop(request);
        assert!(!busy.shed(), "an authenticated connection");
        assert!(waiting.shed());
        assert!(waiting.is_shed() && !waiting.sheddable());
        let late = BusyGuard::begin(Arc::clone(&waiting));
        drop(late);
        assert!(waiting.is_shed(), "a shed connection stays shed");
        assert!(waiting.deadline(limits()).unwrap() <= Instant::now());
    }

    #[tokio::test]
    async fn a_shed_connection_s_watchdog_fires_at_once() {
        let activity = activity();
        activity.waited(SHED_GRACE);
        let watchdog = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.watchdog(limits()).await }
        });
        tokio::task::yield_now().await;
        assert!(activity.shed());
        tokio::time::timeout(Duration::from_secs(5), watchdog)
            .await
            .expect("shed connections close")
            .unwrap();
    }
}
