//! The approval expiry sweep: a background task of each coordinator that, every
//! `approval_sweep_ms`, denies the approval requests whose `expires_at` passed
//! undecided (with [`EXPIRED_REASON`](oxydra_runtime::EXPIRED_REASON)) and queues
//! their runs again, so a run nobody answers still ends. It holds the coordinator
//! weakly and stops when the coordinator shuts down or is dropped. Several
//! coordinators on one shared store may sweep together: the store decides each
//! request once.

use std::sync::{Arc, Weak};

use crate::coordinator::{Coordinator, Inner};

/// Starts the sweep of the coordinator `inner` (from within a Tokio runtime).
pub(crate) fn spawn(inner: &Arc<Inner>) {
    let period = inner.config.approval_sweep();
    let shutdown = inner.queue.shutdown_token();
    let weak: Weak<Inner> = Arc::downgrade(inner);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let coordinator = Coordinator { inner };
            match coordinator.expire_approvals().await {
                Ok(0) => {}
                Ok(runs) => tracing::info!(runs, "lapsed approval requests denied; runs queued"),
                Err(error) => tracing::warn!(%error, "could not expire approval requests"),
            }
        }
    });
}
