//! When the mock server's first request arrived and how long it spent answering, for
//! measuring a client against it from another process (`cargo xtask peer-cost`
//! subtracts the server's time from a run's wall time).
//!
//! The first arrival is a `CLOCK_MONOTONIC` reading, which every process on the machine
//! shares: a measuring process that reads the same clock just before it starts the
//! client gets the client's start-up as the difference.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What [`crate::MockServer::serve_times`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServeTimes {
    /// `CLOCK_MONOTONIC` when the first request's head arrived (before its body was
    /// read); `None` before any did.
    pub first_request: Option<Duration>,
    /// Summed over every request: from its head's arrival until its response was
    /// handed to the connection whole (a streamed body: its last piece handed on, or
    /// the client hanging up; a whole body: the response built). Requests answered at
    /// once overlap and count each.
    pub answering: Duration,
}

/// The live record behind [`ServeTimes`].
#[derive(Debug, Default)]
pub(crate) struct Timing {
    first_request: OnceLock<Option<Duration>>,
    answering_nanos: AtomicU64,
}

impl Timing {
    /// Notes a request's arrival; the returned guard adds the time until it is dropped.
    pub(crate) fn arrived(self: &Arc<Self>) -> Answering {
        let since = Instant::now();
        self.first_request.get_or_init(monotonic_now);
        Answering {
            since,
            timing: Arc::clone(self),
        }
    }

    /// What has been recorded so far.
    pub(crate) fn snapshot(&self) -> ServeTimes {
        ServeTimes {
            first_request: self.first_request.get().copied().flatten(),
            answering: Duration::from_nanos(self.answering_nanos.load(Ordering::SeqCst)),
        }
    }
}

/// One request being answered: dropping it adds the time since its arrival.
#[derive(Debug)]
pub(crate) struct Answering {
    since: Instant,
    timing: Arc<Timing>,
}

impl Drop for Answering {
    fn drop(&mut self) {
        let nanos = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.timing
            .answering_nanos
            .fetch_add(nanos, Ordering::SeqCst);
    }
}

/// The `CLOCK_MONOTONIC` reading now, as a duration since its (boot-time) origin;
/// `None` where the clock cannot be read.
pub fn monotonic_now() -> Option<Duration> {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    let seconds = u64::try_from(now.tv_sec()).ok()?;
    let nanos = u32::try_from(now.tv_nsec()).ok()?;
    Some(Duration::new(seconds, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_recorded_before_a_request() {
        let timing = Arc::new(Timing::default());
        assert_eq!(timing.snapshot(), ServeTimes::default());
    }

    #[test]
    fn the_first_arrival_stays_and_each_answer_adds_its_time() {
        let timing = Arc::new(Timing::default());
        let before = monotonic_now().unwrap();
        let first = timing.arrived();
        let second = timing.arrived();
        let after = monotonic_now().unwrap();
        let arrived = timing.snapshot().first_request.unwrap();
        assert!(before <= arrived && arrived <= after, "{arrived:?}");
        // Still open: nothing added yet.
        assert_eq!(timing.snapshot().answering, Duration::ZERO);
        let first_started = first.since;
        drop(first);
        let one = timing.snapshot().answering;
        assert!(one > Duration::ZERO && one <= first_started.elapsed());
        drop(second);
        let both = timing.snapshot().answering;
        assert!(both > one);
        // A later request does not move the first arrival.
        drop(timing.arrived());
        assert_eq!(timing.snapshot().first_request, Some(arrived));
    }
}
