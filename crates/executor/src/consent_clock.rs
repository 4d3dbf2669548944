//! The clock a batch's time budget runs on: it stops while a consent question waits
//! for a person, so a person who takes a while to answer does not use up the turn's
//! time (the question has its own bound, the executor's `permission_timeout`).
//!
//! One [`ConsentClock`] travels with a batch's [`ExecutionContext`](crate::ExecutionContext);
//! the executor stops it for as long as it waits on the permission broker, and whoever
//! times the batch waits on [`ConsentClock::run_out`] instead of a plain sleep. The
//! clock reads `tokio::time::Instant`, so tests may run it on paused time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How long the clock has been stopped.
#[derive(Debug, Clone, Copy, Default)]
struct Stopped {
    /// Questions pending now (parallel calls may ask at once).
    asking: usize,
    /// When the first pending question was asked.
    since: Option<Instant>,
    /// Time spent with a question pending, before `since`.
    total: Duration,
}

impl Stopped {
    /// Time spent with a question pending, up to `now`.
    fn at(&self, now: Instant) -> Duration {
        let current = self
            .since
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        self.total.saturating_add(current)
    }
}

/// A batch's clock: time passes on it except while a consent question is pending.
/// Clones share the clock.
#[derive(Debug, Clone, Default)]
pub struct ConsentClock {
    stopped: Arc<watch::Sender<Stopped>>,
}

/// Keeps a [`ConsentClock`] stopped until it is dropped.
#[derive(Debug)]
#[must_use = "the clock runs again when the pause is dropped"]
pub struct ClockPause {
    stopped: Arc<watch::Sender<Stopped>>,
}

impl Drop for ClockPause {
    fn drop(&mut self) {
        let now = Instant::now();
        self.stopped.send_modify(|stopped| {
            stopped.asking = stopped.asking.saturating_sub(1);
            if stopped.asking == 0
                && let Some(since) = stopped.since.take()
            {
                stopped.total = stopped
                    .total
                    .saturating_add(now.saturating_duration_since(since));
            }
        });
    }
}

impl ConsentClock {
    /// A running clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the clock until the returned pause is dropped (with several pauses at
    /// once, until the last is dropped).
    pub fn pause(&self) -> ClockPause {
        let now = Instant::now();
        self.stopped.send_modify(|stopped| {
            if stopped.asking == 0 {
                stopped.since = Some(now);
            }
            stopped.asking = stopped.asking.saturating_add(1);
        });
        ClockPause {
            stopped: Arc::clone(&self.stopped),
        }
    }

    /// Whether a question is pending now.
    pub fn is_paused(&self) -> bool {
        self.stopped.borrow().asking > 0
    }

    /// The time spent with a question pending so far.
    pub fn paused_for(&self) -> Duration {
        self.stopped.borrow().at(Instant::now())
    }

    /// Completes once `budget` has passed on the clock since the call: wall time
    /// without the time a question was pending.
    pub async fn run_out(&self, budget: Duration) {
        let mut changes = self.stopped.subscribe();
        let start = Instant::now();
        let stopped_at_start = changes.borrow_and_update().at(start);
        loop {
            let stopped = *changes.borrow_and_update();
            let now = Instant::now();
            let stopped_since_start = stopped.at(now).saturating_sub(stopped_at_start);
            let counted = now
                .saturating_duration_since(start)
                .saturating_sub(stopped_since_start);
            if stopped.asking > 0 {
                // Stopped: nothing to count until the question is answered. (`self`
                // holds the sender, so `changed` cannot fail while we wait.)
                let _ = changes.changed().await;
                continue;
            }
            let Some(left) = budget.checked_sub(counted).filter(|left| !left.is_zero()) else {
                return;
            };
            tokio::select! {
                () = tokio::time::sleep(left) => {}
                _ = changes.changed() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn a_running_clock_runs_out_on_time() {
        let clock = ConsentClock::new();
        let start = Instant::now();
        clock.run_out(10 * SECOND).await;
        assert_eq!(start.elapsed(), 10 * SECOND);
        assert!(!clock.is_paused());
        assert_eq!(clock.paused_for(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn time_with_a_question_pending_is_not_counted() {
        let clock = ConsentClock::new();
        let start = Instant::now();
        let timer = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.run_out(10 * SECOND).await })
        };
        tokio::time::sleep(4 * SECOND).await;
        let first = clock.pause();
        // A second question asked while the first waits: one stop, not two.
        tokio::time::sleep(SECOND).await;
        let second = clock.pause();
        assert!(clock.is_paused());
        tokio::time::sleep(100 * SECOND).await;
        drop(first);
        tokio::time::sleep(SECOND).await;
        assert!(
            !timer.is_finished(),
            "the budget ran out while a person was asked"
        );
        drop(second);
        assert!(!clock.is_paused());
        timer.await.unwrap();
        // 4 s before the questions, 6 s after: 102 s stopped.
        assert_eq!(start.elapsed(), 112 * SECOND);
        assert_eq!(clock.paused_for(), 102 * SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_before_the_timer_started_is_not_taken_off_it() {
        let clock = ConsentClock::new();
        let pause = clock.pause();
        tokio::time::sleep(50 * SECOND).await;
        drop(pause);
        let start = Instant::now();
        clock.run_out(3 * SECOND).await;
        assert_eq!(start.elapsed(), 3 * SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_budget_runs_out_at_once() {
        let start = Instant::now();
        ConsentClock::new().run_out(Duration::ZERO).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
