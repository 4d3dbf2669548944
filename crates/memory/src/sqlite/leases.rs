//! Session leases in the `session_leases` table: one writer per session at a time. What
//! to do with a lease is [`LeaseDecision`]'s call; this module reads and writes rows.

use std::path::Path;
use std::time::Duration;

use oxydra_types::SessionId;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::now_ms;
use crate::error::MemoryError;
use crate::lease::{LeaseOwner, SessionLease, holder_is_gone, lease_expiry as expiry};
use crate::lease_decision::LeaseDecision;

/// The lease row stored for `session`, live or lapsed, if any.
pub fn stored_lease(
    tx: &Transaction<'_>,
    session: &SessionId,
) -> rusqlite::Result<Option<SessionLease>> {
    tx.prepare_cached(
        "SELECT owner, pid, host, acquired_at, expires_at FROM session_leases
         WHERE session_id = ?1",
    )?
    .query_row(params![session.as_str()], |row| {
        Ok(SessionLease::from_row(
            session,
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
        ))
    })
    .optional()
}

/// Takes the lease on `session` for `owner` (see `Memory::acquire_session_lease`), in
/// one `BEGIN IMMEDIATE` transaction so that of two processes asking at once one wins.
pub fn acquire(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    owner: &LeaseOwner,
    ttl: Duration,
) -> Result<SessionLease, MemoryError> {
    let err = |source| {
        super::error::db(
            path,
            &format!("take the lease on session {session}"),
            source,
        )
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let now = now_ms();
    let stored = stored_lease(&tx, session).map_err(err)?;
    let lease = LeaseDecision::decide(stored.as_ref(), &owner.id, now, holder_is_gone)
        .into_lease(session, owner, now, ttl)?;
    tx.execute(
        "INSERT INTO session_leases (session_id, owner, pid, host, acquired_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id) DO UPDATE
         SET owner = excluded.owner, pid = excluded.pid, host = excluded.host,
             acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
        params![
            session.as_str(),
            lease.owner,
            i64::from(lease.pid),
            lease.host,
            lease.acquired_at_ms,
            lease.expires_at_ms
        ],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(lease)
}

/// Extends `lease` until `ttl` from now, if it is still its holder's.
pub fn renew(
    conn: &mut Connection,
    path: &Path,
    lease: &SessionLease,
    ttl: Duration,
) -> Result<SessionLease, MemoryError> {
    let session = &lease.session_id;
    let err = |source| {
        super::error::db(
            path,
            &format!("renew the lease on session {session}"),
            source,
        )
    };
    let expires = expiry(now_ms(), ttl);
    let updated = conn
        .prepare_cached(
            "UPDATE session_leases SET expires_at = ?3 WHERE session_id = ?1 AND owner = ?2",
        )
        .and_then(|mut stmt| stmt.execute(params![session.as_str(), lease.owner, expires]))
        .map_err(err)?;
    if updated == 0 {
        return Err(MemoryError::LeaseLost {
            session: session.clone(),
        });
    }
    Ok(SessionLease {
        expires_at_ms: expires,
        ..lease.clone()
    })
}

/// Deletes `lease` if it is still its holder's.
pub fn release(conn: &Connection, path: &Path, lease: &SessionLease) -> Result<(), MemoryError> {
    let session = &lease.session_id;
    conn.prepare_cached("DELETE FROM session_leases WHERE session_id = ?1 AND owner = ?2")
        .and_then(|mut stmt| stmt.execute(params![session.as_str(), lease.owner]))
        .map(|_| ())
        .map_err(|source| {
            super::error::db(
                path,
                &format!("release the lease on session {session}"),
                source,
            )
        })
}
