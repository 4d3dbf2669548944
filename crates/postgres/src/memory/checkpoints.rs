//! [`CheckpointStore`](oxydra_memory::CheckpointStore) on PostgreSQL: the same tables
//! and retention as the SQLite store's migration 5.

use oxydra_memory::{CheckpointBlob, MemoryError, StoredCheckpoint};
use oxydra_types::{Checkpoint, SessionId};
use tokio_postgres::Transaction;

use crate::database::PostgresDatabase;
use crate::now_ms;

/// Contents no checkpoint refers to any more.
pub(super) const DROP_ORPHAN_BLOBS: &str = "DELETE FROM checkpoint_blobs b WHERE NOT EXISTS
     (SELECT 1 FROM checkpoint_blob_refs r WHERE r.hash = b.hash)";

fn corrupt(db: &PostgresDatabase, what: String, message: String) -> MemoryError {
    MemoryError::Corrupt {
        location: db.location().to_owned(),
        what,
        message,
    }
}

fn turn_of(turn: u64) -> i64 {
    i64::try_from(turn).unwrap_or(i64::MAX)
}

/// Deletes the session's checkpoints of turns `from_turn` and later (with `to_turn`:
/// only that one), their references and the contents left without one.
async fn delete_turns(
    db: &PostgresDatabase,
    tx: &Transaction<'_>,
    session: &SessionId,
    from_turn: i64,
    only: bool,
    action: &str,
) -> Result<(), MemoryError> {
    let op = if only { "=" } else { ">=" };
    tx.execute(
        &format!(
            "DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN
             (SELECT id FROM checkpoints WHERE session_id = $1 AND turn {op} $2)"
        ),
        &[&session.as_str(), &from_turn],
    )
    .await
    .map_err(|e| db.error(action, &e))?;
    tx.execute(
        &format!("DELETE FROM checkpoints WHERE session_id = $1 AND turn {op} $2"),
        &[&session.as_str(), &from_turn],
    )
    .await
    .map_err(|e| db.error(action, &e))?;
    Ok(())
}

/// Stores one checkpoint with its contents, then applies the retention; one
/// transaction.
pub(super) async fn store(
    db: &PostgresDatabase,
    session: &SessionId,
    checkpoint: &Checkpoint,
    blobs: &[CheckpointBlob],
    keep_last: usize,
) -> Result<i64, MemoryError> {
    let action = format!("store a checkpoint of {session}");
    let payload = serde_json::to_string(checkpoint)
        .map_err(|e| corrupt(db, format!("checkpoint of {session}"), e.to_string()))?;
    let turn = turn_of(checkpoint.turn);
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    delete_turns(db, &tx, session, turn, true, &action).await?;
    let row = tx
        .query_one(
            "INSERT INTO checkpoints (session_id, turn, payload, created_at)
             VALUES ($1, $2, $3, $4) RETURNING id",
            &[&session.as_str(), &turn, &payload, &now_ms()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let id: i64 = row.try_get(0).map_err(|e| db.error(&action, &e))?;
    for blob in blobs {
        tx.execute(
            "INSERT INTO checkpoint_blobs (hash, content) VALUES ($1, $2)
             ON CONFLICT (hash) DO NOTHING",
            &[&blob.hash, &blob.content],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    }
    for hash in checkpoint.before_hashes() {
        tx.execute(
            "INSERT INTO checkpoint_blob_refs (checkpoint_id, hash) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
            &[&id, &hash],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    }
    let keep = i64::try_from(keep_last).unwrap_or(i64::MAX);
    let stale = "SELECT id FROM checkpoints WHERE session_id = $1
                 ORDER BY turn DESC OFFSET $2";
    for sql in [
        format!("DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN ({stale})"),
        format!("DELETE FROM checkpoints WHERE id IN ({stale})"),
    ] {
        tx.execute(&sql, &[&session.as_str(), &keep])
            .await
            .map_err(|e| db.error(&action, &e))?;
    }
    tx.execute(DROP_ORPHAN_BLOBS, &[])
        .await
        .map_err(|e| db.error(&action, &e))?;
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(id)
}

/// The session's checkpoints, oldest turn first.
pub(super) async fn list(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<Vec<StoredCheckpoint>, MemoryError> {
    let action = format!("list the checkpoints of {session}");
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT id, payload FROM checkpoints WHERE session_id = $1 ORDER BY turn",
            &[&session.as_str()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let mut listed = Vec::with_capacity(rows.len());
    for row in rows {
        let id: i64 = row.try_get(0).map_err(|e| db.error(&action, &e))?;
        let payload: String = row.try_get(1).map_err(|e| db.error(&action, &e))?;
        let checkpoint = serde_json::from_str(&payload)
            .map_err(|e| corrupt(db, format!("checkpoint {id} of {session}"), e.to_string()))?;
        listed.push(StoredCheckpoint {
            id,
            session_id: session.clone(),
            checkpoint,
        });
    }
    Ok(listed)
}

/// The content stored under `hash`.
pub(super) async fn blob(
    db: &PostgresDatabase,
    hash: &str,
) -> Result<Option<Vec<u8>>, MemoryError> {
    let action = "read a checkpoint content";
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT content FROM checkpoint_blobs WHERE hash = $1",
            &[&hash],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    match row {
        Some(row) => Ok(Some(row.try_get(0).map_err(|e| db.error(action, &e))?)),
        None => Ok(None),
    }
}

/// Deletes the session's checkpoints from `from_turn` on.
pub(super) async fn delete_from(
    db: &PostgresDatabase,
    session: &SessionId,
    from_turn: u64,
) -> Result<(), MemoryError> {
    let action = format!("delete checkpoints of {session}");
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    delete_turns(db, &tx, session, turn_of(from_turn), false, &action).await?;
    tx.execute(DROP_ORPHAN_BLOBS, &[])
        .await
        .map_err(|e| db.error(&action, &e))?;
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(())
}

/// Deletes the session's messages after `keep_through`, and a summary covering any.
pub(super) async fn truncate(
    db: &PostgresDatabase,
    session: &SessionId,
    keep_through: u64,
) -> Result<(), MemoryError> {
    let action = format!("rewind the messages of {session}");
    let keep = turn_of(keep_through);
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    super::leases::lock_session(db, &tx, session, &action).await?;
    let now = now_ms();
    for (sql, with_now) in [
        (
            "DELETE FROM conversation_events WHERE session_id = $1 AND sequence > $2",
            false,
        ),
        (
            "UPDATE sessions SET last_sequence = LEAST(last_sequence, $2), updated_at = $3
             WHERE session_id = $1",
            true,
        ),
        (
            "UPDATE session_state SET summary = NULL, covers_through = 0, epoch = epoch + 1,
             updated_at = $3 WHERE session_id = $1 AND covers_through > $2",
            true,
        ),
    ] {
        let result = if with_now {
            tx.execute(sql, &[&session.as_str(), &keep, &now]).await
        } else {
            tx.execute(sql, &[&session.as_str(), &keep]).await
        };
        result.map_err(|e| db.error(&action, &e))?;
    }
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(())
}

/// The statements that delete a session's checkpoints (with its other rows).
pub(super) const DELETE_SESSION: [&str; 2] = [
    "DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN
     (SELECT id FROM checkpoints WHERE session_id = $1)",
    "DELETE FROM checkpoints WHERE session_id = $1",
];
