//! The lease a run holds on its session in memory: taken before the session is read
//! for writing, renewed while the run lasts, released when it ends.

use std::sync::Arc;
use std::time::Duration;

use oxydra_memory::{DEFAULT_LEASE_TTL, LeaseOwner, Memory, MemoryError, SessionLease};
use oxydra_types::SessionId;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::RuntimeError;

/// How long a run waits for a session another run holds, unless changed.
pub const DEFAULT_SESSION_WAIT: Duration = Duration::from_secs(2);

/// How often a waiting run asks again for a busy session.
const RETRY_EVERY: Duration = Duration::from_millis(50);

/// How a run takes its session's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseSettings {
    /// The lease's time to live; the holder renews it every third of it.
    pub ttl: Duration,
    /// How long to wait for a session another run holds before failing.
    pub wait: Duration,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_LEASE_TTL,
            wait: DEFAULT_SESSION_WAIT,
        }
    }
}

/// A lease this run holds; renewed in the background until released or dropped.
pub(crate) struct HeldLease {
    memory: Arc<dyn Memory>,
    lease: SessionLease,
    stop: CancellationToken,
    renewer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for HeldLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldLease")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// Takes the lease on `session` for a new owner, asking again while another run holds
/// it, for up to `settings.wait`; then fails with [`RuntimeError::SessionBusy`] naming
/// the holder. Stops at once when `cancel` fires.
pub(crate) async fn acquire(
    memory: &Arc<dyn Memory>,
    session: &SessionId,
    settings: LeaseSettings,
    cancel: &CancellationToken,
) -> Result<HeldLease, RuntimeError> {
    let owner = LeaseOwner::generate();
    let deadline = tokio::time::Instant::now() + settings.wait;
    let mut waited = false;
    let lease = loop {
        let attempt = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(RuntimeError::Cancelled),
            attempt = memory.acquire_session_lease(session, &owner, settings.ttl) => attempt,
        };
        match attempt {
            Ok(lease) => break lease,
            Err(MemoryError::SessionBusy { holder })
                if tokio::time::Instant::now() + RETRY_EVERY <= deadline =>
            {
                if !waited {
                    tracing::info!(session_id = %session, holder = %holder.holder(), "session in use by another run; waiting");
                    waited = true;
                }
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Err(RuntimeError::Cancelled),
                    () = tokio::time::sleep(RETRY_EVERY) => {}
                }
            }
            Err(error) => return Err(error.into()),
        }
    };
    tracing::debug!(session_id = %session, owner = %owner.id, "session lease taken");
    let stop = CancellationToken::new();
    let renewer = tokio::spawn(renew(
        Arc::clone(memory),
        lease.clone(),
        settings.ttl,
        stop.clone(),
    ));
    Ok(HeldLease {
        memory: Arc::clone(memory),
        lease,
        stop,
        renewer: Some(renewer),
    })
}

/// Renews `lease` every third of `ttl` until `stop` fires or the lease is lost.
async fn renew(
    memory: Arc<dyn Memory>,
    mut lease: SessionLease,
    ttl: Duration,
    stop: CancellationToken,
) {
    let every = (ttl / 3).max(Duration::from_millis(10));
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        match memory.renew_session_lease(&lease, ttl).await {
            Ok(renewed) => lease = renewed,
            Err(error @ MemoryError::LeaseLost { .. }) => {
                // Appends are refused from now on; the run ends at its next write.
                tracing::warn!(%error, "session lease lost");
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "could not renew the session lease; trying again");
            }
        }
    }
}

impl HeldLease {
    /// Stops renewing and gives the lease up; a failure is logged (the lease then
    /// lapses after its time to live).
    pub async fn release(mut self) {
        self.stop.cancel();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.await;
        }
        if let Err(error) = self.memory.release_session_lease(&self.lease).await {
            tracing::warn!(%error, "could not release the session lease; it lapses on its own");
        }
    }
}

impl Drop for HeldLease {
    /// A run dropped before it released its lease (its future was dropped) gives the
    /// lease up on a spawned task.
    fn drop(&mut self) {
        self.stop.cancel();
        let Some(renewer) = self.renewer.take() else {
            return;
        };
        renewer.abort();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let memory = Arc::clone(&self.memory);
            let lease = self.lease.clone();
            handle.spawn(async move {
                if let Err(error) = memory.release_session_lease(&lease).await {
                    tracing::warn!(%error, "could not release the session lease; it lapses on its own");
                }
            });
        }
    }
}
