//! Session leases in `session_leases`, and the per-session lock every write of a
//! session takes first so that a lease change and an append never interleave. What to
//! do with a lease is [`LeaseDecision`]'s call; this module reads and writes rows.

use std::time::Duration;

use deadpool_postgres::Transaction;
use oxydra_memory::{
    LeaseDecision, LeaseOwner, MemoryError, SessionLease, holder_is_gone, lease_expiry,
};
use oxydra_types::SessionId;
use tokio_postgres::Row;

use crate::database::PostgresDatabase;
use crate::now_ms;

fn lease_from_row(session: &SessionId, row: &Row) -> Result<SessionLease, tokio_postgres::Error> {
    Ok(SessionLease::from_row(
        session,
        row.try_get(0)?,
        row.try_get(1)?,
        row.try_get(2)?,
        row.try_get(3)?,
        row.try_get(4)?,
    ))
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

/// The lease row stored for `session`, live or lapsed, if any.
pub(super) async fn stored_lease(
    db: &PostgresDatabase,
    tx: &Transaction<'_>,
    session: &SessionId,
    action: &str,
) -> Result<Option<SessionLease>, MemoryError> {
    let statement = tx
        .prepare_cached(
            "SELECT owner, pid, host, acquired_at, expires_at FROM session_leases
             WHERE session_id = $1",
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    let row = tx
        .query_opt(&statement, &[&session.as_str()])
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
    let stored = stored_lease(db, &tx, session, &action).await?;
    let lease = LeaseDecision::decide(stored.as_ref(), &owner.id, now, holder_is_gone)
        .into_lease(session, owner, now, ttl)?;
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
