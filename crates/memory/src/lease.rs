//! Session leases: one writer per session at a time.

use std::fmt;
use std::time::Duration;

use oxydra_types::{RunId, SessionId};

/// How long a lease lasts unless renewed, when the caller has no better idea. A holder
/// renews well before that; a holder that died (even by `kill -9`) stops renewing, so
/// its lease lapses after at most this long and the session can be taken over.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// Who holds, or asks for, a session's lease: an id unique to one run, and the process
/// it runs in (shown to whoever finds the session busy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// Unique to the run holding the lease.
    pub id: String,
    /// The process the run lives in.
    pub pid: u32,
}

impl LeaseOwner {
    /// A fresh owner in this process: no other run, here or elsewhere, has its id.
    pub fn generate() -> Self {
        let pid = std::process::id();
        Self {
            id: format!("pid{pid}-{}", RunId::generate()),
            pid,
        }
    }
}

/// A session's lease as stored: who holds it, since when, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLease {
    /// The session.
    pub session_id: SessionId,
    /// The holder's unique id ([`LeaseOwner::id`]).
    pub owner: String,
    /// The holder's process id.
    pub pid: u32,
    /// When the holder took it (ms since the Unix epoch).
    pub acquired_at_ms: i64,
    /// When it lapses unless renewed (ms since the Unix epoch).
    pub expires_at_ms: i64,
}

impl SessionLease {
    /// Whether the lease is held by `owner`.
    pub fn is_held_by(&self, owner: &LeaseOwner) -> bool {
        self.owner == owner.id
    }

    /// `pid 1234, since 17:20:03 UTC` — for messages about a busy session.
    pub fn holder(&self) -> String {
        format!(
            "pid {}, since {} UTC",
            self.pid,
            utc_time(self.acquired_at_ms)
        )
    }
}

impl fmt::Display for SessionLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease on session {} ({})",
            self.session_id,
            self.holder()
        )
    }
}

/// `HH:MM:SS` of a time in ms since the Unix epoch, in UTC.
fn utc_time(ms: i64) -> String {
    let seconds = ms.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// A lease's expiry `ttl` after `now_ms`.
pub(crate) fn expiry(now_ms: i64, ttl: Duration) -> i64 {
    now_ms.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_unique_and_name_the_process() {
        let (a, b) = (LeaseOwner::generate(), LeaseOwner::generate());
        assert_ne!(a.id, b.id);
        assert_eq!(a.pid, std::process::id());
        assert!(a.id.starts_with(&format!("pid{}-", a.pid)));
    }

    #[test]
    fn the_holder_reads_with_pid_and_utc_time() {
        let lease = SessionLease {
            session_id: SessionId::from("ses_x"),
            owner: "o".into(),
            pid: 42,
            // 2026-11-23 17:20:03.5 UTC
            acquired_at_ms: 1_795_454_403_500,
            expires_at_ms: 0,
        };
        assert_eq!(lease.holder(), "pid 42, since 17:20:03 UTC");
        assert!(lease.to_string().contains("ses_x"));
        assert_eq!(expiry(1_000, Duration::from_secs(2)), 3_000);
        assert_eq!(expiry(i64::MAX, Duration::from_secs(2)), i64::MAX);
    }
}
