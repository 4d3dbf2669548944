//! Session leases: one writer per session at a time.

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use oxydra_types::{RunId, SessionId};

/// How long a lease lasts unless renewed, when the caller has no better idea. A holder
/// renews well before that; a holder that died (even by `kill -9`) stops renewing, so
/// its lease lapses after at most this long and the session can be taken over.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// Who holds, or asks for, a session's lease: an id unique to one run, and the process
/// and host it runs on (shown to whoever finds the session busy, and used to take over
/// at once from a holder whose process is gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// Unique to the run holding the lease.
    pub id: String,
    /// The process the run lives in.
    pub pid: u32,
    /// The host name of the machine it runs on.
    pub host: String,
}

impl LeaseOwner {
    /// A fresh owner in this process: no other run, here or elsewhere, has its id.
    pub fn generate() -> Self {
        let pid = std::process::id();
        Self {
            id: format!("pid{pid}-{}", RunId::generate()),
            pid,
            host: this_host().to_owned(),
        }
    }
}

/// This machine's host name (empty when it cannot be read).
pub fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        #[cfg(unix)]
        {
            nix::unistd::gethostname()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default()
        }
        #[cfg(not(unix))]
        {
            String::new()
        }
    })
}

/// Whether the process holding `lease` is known to be gone: it ran on this host (by
/// name) and no process has its id any more. Anything uncertain — another host, an
/// unknown host name, a process id that exists (perhaps reused), no permission to ask —
/// counts as alive, and the lease then lapses only after its time to live.
pub fn holder_is_gone(lease: &SessionLease) -> bool {
    let host = this_host();
    !host.is_empty() && lease.host == host && lease.pid != 0 && !process_exists(lease.pid)
}

#[cfg(unix)]
fn process_exists(pid: u32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    // Signal 0 checks that the process exists without sending anything.
    !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
}

#[cfg(not(unix))]
fn process_exists(_pid: u32) -> bool {
    true
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
    /// The host name of the holder's machine.
    pub host: String,
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

/// A lease's expiry `ttl` after `now_ms` (saturating), for backends storing leases.
pub fn lease_expiry(now_ms: i64, ttl: Duration) -> i64 {
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
        assert_eq!(a.host, this_host());
    }

    #[test]
    fn only_a_holder_known_gone_on_this_host_counts_as_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let lease = |pid: u32, host: &str| SessionLease {
            session_id: SessionId::from("ses_x"),
            owner: "o".into(),
            pid,
            host: host.into(),
            acquired_at_ms: 0,
            expires_at_ms: i64::MAX,
        };
        assert!(!this_host().is_empty());
        assert!(holder_is_gone(&lease(dead, this_host())));
        assert!(!holder_is_gone(&lease(std::process::id(), this_host())));
        assert!(!holder_is_gone(&lease(dead, "another-host")));
        assert!(!holder_is_gone(&lease(0, this_host())));
    }

    #[test]
    fn the_holder_reads_with_pid_and_utc_time() {
        let lease = SessionLease {
            session_id: SessionId::from("ses_x"),
            owner: "o".into(),
            pid: 42,
            host: "h".into(),
            // 2026-11-23 17:20:03.5 UTC
            acquired_at_ms: 1_795_454_403_500,
            expires_at_ms: 0,
        };
        assert_eq!(lease.holder(), "pid 42, since 17:20:03 UTC");
        assert!(lease.to_string().contains("ses_x"));
        assert_eq!(lease_expiry(1_000, Duration::from_secs(2)), 3_000);
        assert_eq!(lease_expiry(i64::MAX, Duration::from_secs(2)), i64::MAX);
    }
}
