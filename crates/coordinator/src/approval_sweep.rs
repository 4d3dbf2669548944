//! The approval expiry sweep: a background task of each coordinator that, every
//! `approval_sweep_ms`, denies the approval requests whose `expires_at` passed
//! undecided (with [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON)) and queues
//! their runs again, so a run nobody answers still ends. It stops when the
//! coordinator shuts down or is dropped. Several coordinators on one shared store may
//! sweep together: the store decides each request once.
//!
//! The sweep is only the timer: the coordinator hands it one sweep as a function
//! (holding the coordinator weakly), so this module does not depend on the coordinator
//! and the coordinator's module is the only one that starts it.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::CoordinatorError;

/// Starts [`run`] on a task of its own (from within a Tokio runtime).
pub(crate) fn spawn<F, S>(period: Duration, shutdown: CancellationToken, sweep: F)
where
    F: FnMut() -> Option<S> + Send + 'static,
    S: Future<Output = Result<usize, CoordinatorError>> + Send + 'static,
{
    tokio::spawn(run(period, shutdown, sweep));
}

/// Every `period` (the first at once) runs one `sweep`, which answers how many runs it
/// queued again, until `shutdown` fires or `sweep` gives `None` (the coordinator is
/// gone). A failed sweep is logged and the next one comes as usual.
pub(crate) async fn run<F, S>(period: Duration, shutdown: CancellationToken, mut sweep: F)
where
    F: FnMut() -> Option<S>,
    S: Future<Output = Result<usize, CoordinatorError>>,
{
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Some(one) = sweep() else {
            return;
        };
        match one.await {
            Ok(0) => {}
            Ok(runs) => tracing::info!(runs, "lapsed approval requests denied; runs queued"),
            Err(error) => tracing::warn!(%error, "could not expire approval requests"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const PERIOD: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn sweeps_until_the_coordinator_is_gone_and_survives_a_failed_sweep() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let sweep = move || {
            let call = counted.fetch_add(1, Ordering::SeqCst);
            (call < 3).then_some(async move {
                if call == 1 {
                    Err(CoordinatorError::ShuttingDown)
                } else {
                    Ok(call)
                }
            })
        };
        tokio::time::timeout(
            Duration::from_secs(10),
            run(PERIOD, CancellationToken::new(), sweep),
        )
        .await
        .expect("the sweep stops once the coordinator is gone");
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn stops_at_shutdown_without_sweeping() {
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let sweep = move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Some(async { Ok(0) })
        };
        tokio::time::timeout(Duration::from_secs(10), run(PERIOD, shutdown, sweep))
            .await
            .expect("a shut down coordinator's sweep ends");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}
