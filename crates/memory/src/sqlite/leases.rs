//! Session leases in the `session_leases` table: one writer per session at a time.

use std::path::Path;
use std::time::Duration;

use oxydra_types::SessionId;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::now_ms;
use crate::error::MemoryError;
use crate::lease::{LeaseOwner, SessionLease, holder_is_gone, lease_expiry as expiry};

fn lease_from_row(session: &SessionId, row: &Row<'_>) -> rusqlite::Result<SessionLease> {
    Ok(SessionLease {
        session_id: session.clone(),
        owner: row.get(0)?,
        pid: u32::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
        host: row.get(2)?,
        acquired_at_ms: row.get(3)?,
        expires_at_ms: row.get(4)?,
    })
}

/// The live lease on `session` at `now` (one whose expiry is still ahead), if any.
pub fn live_lease(
    tx: &Transaction<'_>,
    session: &SessionId,
    now: i64,
) -> rusqlite::Result<Option<SessionLease>> {
    tx.prepare_cached(
        "SELECT owner, pid, host, acquired_at, expires_at FROM session_leases
         WHERE session_id = ?1 AND expires_at > ?2",
    )?
    .query_row(params![session.as_str(), now], |row| {
        lease_from_row(session, row)
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
    let current = live_lease(&tx, session, now).map_err(err)?;
    let acquired_at = match current {
        Some(holder) if holder.owner == owner.id => holder.acquired_at_ms,
        Some(holder) if holder_is_gone(&holder) => {
            tracing::info!(session_id = %session, pid = holder.pid, "taking the session over from a holder whose process is gone");
            now
        }
        Some(holder) => return Err(MemoryError::SessionBusy { holder }),
        None => now,
    };
    let lease = SessionLease {
        session_id: session.clone(),
        owner: owner.id.clone(),
        pid: owner.pid,
        host: owner.host.clone(),
        acquired_at_ms: acquired_at,
        expires_at_ms: expiry(now, ttl),
    };
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
