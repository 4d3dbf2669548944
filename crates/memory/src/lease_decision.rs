//! What a backend decides about a session's lease, written once for every backend: who
//! may take a lease, who may write to a session, and how a stored lease row reads.
//!
//! These are pure functions of the stored lease row, the caller's owner id and the
//! time. A backend reads the row inside its write transaction (holding whatever lock
//! makes the read and the following write atomic), asks these functions, and writes
//! what they say. Whether a holder's process is gone is the one outside fact; it comes
//! in as a predicate ([`holder_is_gone`](crate::holder_is_gone) in production).

use std::time::Duration;

use oxydra_types::SessionId;

use crate::error::MemoryError;
use crate::lease::{LeaseOwner, SessionLease, lease_expiry};

/// What to do with a request for a session's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// Nobody holds a live lease: take it, starting now.
    Take,
    /// The caller holds the live lease already: extend it, keeping when it was taken.
    Renew {
        /// When the caller first took it (ms since the Unix epoch).
        acquired_at_ms: i64,
    },
    /// Another owner holds a live lease but its process is known to be gone: take the
    /// session over at once, starting now.
    TakeOver {
        /// The lease being taken over.
        from: SessionLease,
    },
    /// Another owner holds a live lease: refuse.
    Refuse {
        /// The lease that stands in the way.
        holder: SessionLease,
    },
}

impl LeaseDecision {
    /// Decides a request by `owner_id` at `now_ms`, given the lease row stored for the
    /// session (`None` when there is none; a stored lease whose expiry is not after
    /// `now_ms` has lapsed and counts as none). `holder_gone` is asked only about a live
    /// lease of another owner.
    pub fn decide(
        stored: Option<&SessionLease>,
        owner_id: &str,
        now_ms: i64,
        holder_gone: impl FnOnce(&SessionLease) -> bool,
    ) -> Self {
        match live(stored, now_ms) {
            None => Self::Take,
            Some(lease) if lease.owner == owner_id => Self::Renew {
                acquired_at_ms: lease.acquired_at_ms,
            },
            Some(lease) if holder_gone(lease) => Self::TakeOver {
                from: lease.clone(),
            },
            Some(lease) => Self::Refuse {
                holder: lease.clone(),
            },
        }
    }

    /// The lease row to store for `owner` on `session` (expiring `ttl` after `now_ms`),
    /// or [`MemoryError::SessionBusy`] naming the holder when the request is refused.
    pub fn into_lease(
        self,
        session: &SessionId,
        owner: &LeaseOwner,
        now_ms: i64,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let acquired_at_ms = match self {
            Self::Take => now_ms,
            Self::Renew { acquired_at_ms } => acquired_at_ms,
            Self::TakeOver { from } => {
                tracing::info!(session_id = %session, pid = from.pid, "taking the session over from a holder whose process is gone");
                now_ms
            }
            Self::Refuse { holder } => return Err(MemoryError::SessionBusy { holder }),
        };
        Ok(SessionLease {
            session_id: session.clone(),
            owner: owner.id.clone(),
            pid: owner.pid,
            host: owner.host.clone(),
            acquired_at_ms,
            expires_at_ms: lease_expiry(now_ms, ttl),
        })
    }
}

/// `stored` when it is live at `now_ms` (its expiry still ahead).
fn live(stored: Option<&SessionLease>, now_ms: i64) -> Option<&SessionLease> {
    stored.filter(|lease| lease.expires_at_ms > now_ms)
}

/// Whether a writer holding the lease of owner `held` (or none) may write to the
/// session at `now_ms`, given its stored lease row: yes unless another owner's lease is
/// live, in which case [`MemoryError::SessionBusy`] names it. A backend asks this inside
/// the write transaction, so a run whose lease lapsed and was taken over cannot write
/// between the new holder's messages.
pub fn check_write(
    stored: Option<SessionLease>,
    held: Option<&str>,
    now_ms: i64,
) -> Result<(), MemoryError> {
    match stored {
        Some(holder) if holder.expires_at_ms > now_ms && Some(holder.owner.as_str()) != held => {
            Err(MemoryError::SessionBusy { holder })
        }
        _ => Ok(()),
    }
}

impl SessionLease {
    /// A lease from the columns of a stored row: `owner, pid, host, acquired_at,
    /// expires_at`. A process id outside `u32` (negative, or too large — a row no
    /// Oxydra wrote) reads as 0, "unknown": such a holder is never taken for gone, so
    /// its lease lapses only with its time to live.
    pub fn from_row(
        session: &SessionId,
        owner: String,
        pid: i64,
        host: String,
        acquired_at_ms: i64,
        expires_at_ms: i64,
    ) -> Self {
        Self {
            session_id: session.clone(),
            owner,
            pid: u32::try_from(pid).unwrap_or(0),
            host,
            acquired_at_ms,
            expires_at_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;
    const TTL: Duration = Duration::from_secs(15);

    fn owner(id: &str) -> LeaseOwner {
        LeaseOwner {
            id: id.into(),
            pid: 7,
            host: "here".into(),
        }
    }

    fn stored(owner: &str, acquired: i64, expires: i64) -> SessionLease {
        SessionLease::from_row(
            &SessionId::from("ses_x"),
            owner.into(),
            42,
            "there".into(),
            acquired,
            expires,
        )
    }

    fn never_gone(_: &SessionLease) -> bool {
        false
    }

    #[test]
    fn no_lease_or_a_lapsed_one_is_taken_fresh() {
        assert_eq!(
            LeaseDecision::decide(None, "a", NOW, never_gone),
            LeaseDecision::Take
        );
        // Expiring exactly now has lapsed; so has an expiry in the past.
        for expires in [NOW, NOW - 1, i64::MIN] {
            let lapsed = stored("b", 0, expires);
            assert_eq!(
                LeaseDecision::decide(Some(&lapsed), "a", NOW, |_| panic!("not asked")),
                LeaseDecision::Take
            );
            // Even the caller's own lapsed lease starts afresh.
            assert_eq!(
                LeaseDecision::decide(Some(&lapsed), "b", NOW, never_gone),
                LeaseDecision::Take
            );
        }
        let lease = LeaseDecision::Take
            .into_lease(&SessionId::from("ses_x"), &owner("a"), NOW, TTL)
            .unwrap();
        assert_eq!(lease.acquired_at_ms, NOW);
        assert_eq!(lease.expires_at_ms, NOW + 15_000);
        assert_eq!((lease.owner.as_str(), lease.pid), ("a", 7));
    }

    #[test]
    fn the_holder_renews_and_keeps_its_start() {
        let mine = stored("a", 500, NOW + 1);
        let decision = LeaseDecision::decide(Some(&mine), "a", NOW, |_| panic!("not asked"));
        assert_eq!(
            decision,
            LeaseDecision::Renew {
                acquired_at_ms: 500
            }
        );
        let lease = decision
            .into_lease(&SessionId::from("ses_x"), &owner("a"), NOW, TTL)
            .unwrap();
        assert_eq!(lease.acquired_at_ms, 500);
        assert_eq!(lease.expires_at_ms, NOW + 15_000);
    }

    #[test]
    fn another_live_holder_is_refused_unless_its_process_is_gone() {
        let theirs = stored("b", 500, i64::MAX);
        let refused = LeaseDecision::decide(Some(&theirs), "a", NOW, never_gone);
        assert_eq!(
            refused,
            LeaseDecision::Refuse {
                holder: theirs.clone()
            }
        );
        let error = refused
            .into_lease(&SessionId::from("ses_x"), &owner("a"), NOW, TTL)
            .unwrap_err();
        assert!(
            matches!(&error, MemoryError::SessionBusy { holder } if holder.owner == "b"),
            "{error:?}"
        );

        let taken = LeaseDecision::decide(Some(&theirs), "a", NOW, |lease| lease.owner == "b");
        assert_eq!(
            taken,
            LeaseDecision::TakeOver {
                from: theirs.clone()
            }
        );
        let lease = taken
            .into_lease(&SessionId::from("ses_x"), &owner("a"), NOW, TTL)
            .unwrap();
        assert_eq!((lease.owner.as_str(), lease.acquired_at_ms), ("a", NOW));
    }

    #[test]
    fn expiry_saturates_for_huge_times_and_ttls() {
        let lease = LeaseDecision::Take
            .into_lease(
                &SessionId::from("ses_x"),
                &owner("a"),
                i64::MAX - 1,
                Duration::MAX,
            )
            .unwrap();
        assert_eq!(lease.expires_at_ms, i64::MAX);
    }

    #[test]
    fn only_another_owners_live_lease_fences_writes() {
        let theirs = || Some(stored("b", 0, NOW + 1));
        assert!(check_write(None, None, NOW).is_ok());
        assert!(check_write(None, Some("a"), NOW).is_ok());
        assert!(check_write(theirs(), Some("b"), NOW).is_ok());
        for held in [None, Some("a")] {
            let error = check_write(theirs(), held, NOW).unwrap_err();
            assert!(
                matches!(&error, MemoryError::SessionBusy { holder } if holder.owner == "b"),
                "{error:?}"
            );
        }
        // A lapsed lease fences nobody.
        assert!(check_write(Some(stored("b", 0, NOW)), None, NOW).is_ok());
    }

    #[test]
    fn out_of_range_process_ids_read_as_unknown() {
        let session = SessionId::from("ses_x");
        for (pid, read) in [
            (1234, 1234),
            (-1, 0),
            (i64::MIN, 0),
            (i64::from(u32::MAX), u32::MAX),
            (i64::from(u32::MAX) + 1, 0),
            (i64::MAX, 0),
        ] {
            let lease = SessionLease::from_row(&session, "o".into(), pid, "h".into(), 1, 2);
            assert_eq!(lease.pid, read, "pid {pid}");
        }
    }
}
