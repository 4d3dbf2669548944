//! Session leases in `session_leases`, and the per-session lock every write of a
//! session takes first so that a lease change and an append never interleave.

use std::time::Duration;

use deadpool_postgres::Transaction;
use oxydra_memory::{LeaseOwner, MemoryError, SessionLease, holder_is_gone, lease_expiry};
use oxydra_types::SessionId;
use tokio_postgres::Row;

use crate::database::PostgresDatabase;
use crate::now_ms;

fn lease_from_row(session: &SessionId, row: &Row) -> Result<SessionLease, tokio_postgres::Error> {
    Ok(SessionLease {
        session_id: session.clone(),
        owner: row.try_get(0)?,
        pid: u32::try_from(row.try_get::<_, i64>(1)?).unwrap_or(0),
        host: row.try_get(2)?,
        acquired_at_ms: row.try_get(3)?,
        expires_at_ms: row.try_get(4)?,
    })
}

/// Serialises the writers of `session` until the end of `tx` (a transaction-scoped
/// advisory lock on the session id's hash: a collision only serialises two sessions).
pub(super) async fn lock_session(
    db: &PostgresDatabase,
    tx: &Transaction<'_>,
    session: &SessionId,
    action: &str,
) -> Result<(), MemoryError> {
    let statement = tx
        .prepare_cached("SELECT pg_advisory_xact_lock(hashtext('oxydra-session:' || $1))")
        .await
        .map_err(|e| db.error(action, &e))?;
    tx.execute(&statement, &[&session.as_str()])
        .await
        .map_err(|e| db.error(action, &e))?;
    Ok(())
}

/// The live lease on `session` at `now`, if any.
pub(super) async fn live_lease(
    db: &PostgresDatabase,
    tx: &Transaction<'_>,
    session: &SessionId,
    now: i64,
    action: &str,
) -> Result<Option<SessionLease>, MemoryError> {
    let statement = tx
        .prepare_cached(
            "SELECT owner, pid, host, acquired_at, expires_at FROM session_leases
             WHERE session_id = $1 AND expires_at > $2",
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    let row = tx
        .query_opt(&statement, &[&session.as_str(), &now])
        .await
        .map_err(|e| db.error(action, &e))?;
    row.map(|row| lease_from_row(session, &row))
        .transpose()
        .map_err(|e| db.error(action, &e).into())
}

/// Takes the lease on `session` for `owner` (see `Memory::acquire_session_lease`).
pub(super) async fn acquire(
    db: &PostgresDatabase,
    session: &SessionId,
    owner: &LeaseOwner,
    ttl: Duration,
) -> Result<SessionLease, MemoryError> {
    let action = format!("take the lease on session {session}");
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    lock_session(db, &tx, session, &action).await?;
    let now = now_ms();
    let acquired_at = match live_lease(db, &tx, session, now, &action).await? {
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
        expires_at_ms: lease_expiry(now, ttl),
    };
    tx.execute(
        "INSERT INTO session_leases (session_id, owner, pid, host, acquired_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (session_id) DO UPDATE
         SET owner = excluded.owner, pid = excluded.pid, host = excluded.host,
             acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
        &[
            &session.as_str(),
            &lease.owner,
            &i64::from(lease.pid),
            &lease.host,
            &lease.acquired_at_ms,
            &lease.expires_at_ms,
        ],
    )
    .await
    .map_err(|e| db.error(&action, &e))?;
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(lease)
}

/// Extends `lease` until `ttl` from now, if it is still its holder's.
pub(super) async fn renew(
    db: &PostgresDatabase,
    lease: &SessionLease,
    ttl: Duration,
) -> Result<SessionLease, MemoryError> {
    let session = &lease.session_id;
    let action = format!("renew the lease on session {session}");
    let expires = lease_expiry(now_ms(), ttl);
    let client = db.client().await?;
    let updated = client
        .execute(
            "UPDATE session_leases SET expires_at = $3 WHERE session_id = $1 AND owner = $2",
            &[&session.as_str(), &lease.owner, &expires],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
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
pub(super) async fn release(
    db: &PostgresDatabase,
    lease: &SessionLease,
) -> Result<(), MemoryError> {
    let session = &lease.session_id;
    let action = format!("release the lease on session {session}");
    let client = db.client().await?;
    client
        .execute(
            "DELETE FROM session_leases WHERE session_id = $1 AND owner = $2",
            &[&session.as_str(), &lease.owner],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    Ok(())
}
