//! The SQL of [`CheckpointStore`](crate::CheckpointStore) on SQLite.

use std::path::Path;

use oxydra_types::{Checkpoint, SessionId};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::migrations::{first_message_key, last_message_key};
use super::now_ms;
use crate::checkpoints::{CheckpointBlob, StoredCheckpoint};
use crate::error::MemoryError;

/// Contents no checkpoint refers to any more.
pub(super) const DROP_ORPHAN_BLOBS: &str = "DELETE FROM checkpoint_blobs WHERE NOT EXISTS
     (SELECT 1 FROM checkpoint_blob_refs r WHERE r.hash = checkpoint_blobs.hash)";

/// Stores one checkpoint with its contents, then applies the retention. One
/// transaction.
pub fn store(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    checkpoint: &Checkpoint,
    blobs: &[CheckpointBlob],
    keep_last: usize,
) -> Result<i64, MemoryError> {
    let err = |source| super::error::db(path, &format!("store a checkpoint of {session}"), source);
    let payload = serde_json::to_string(checkpoint).map_err(|source| MemoryError::Corrupt {
        location: super::error::location(path),
        what: format!("checkpoint of {session}"),
        message: source.to_string(),
    })?;
    let turn = i64::try_from(checkpoint.turn).unwrap_or(i64::MAX);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    tx.execute(
        "DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN
         (SELECT id FROM checkpoints WHERE session_id = ?1 AND turn = ?2)",
        params![session.as_str(), turn],
    )
    .map_err(err)?;
    tx.execute(
        "DELETE FROM checkpoints WHERE session_id = ?1 AND turn = ?2",
        params![session.as_str(), turn],
    )
    .map_err(err)?;
    tx.execute(
        "INSERT INTO checkpoints (session_id, turn, payload, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![session.as_str(), turn, payload, now_ms()],
    )
    .map_err(err)?;
    let id = tx.last_insert_rowid();
    for blob in blobs {
        tx.execute(
            "INSERT INTO checkpoint_blobs (hash, content) VALUES (?1, ?2)
             ON CONFLICT (hash) DO NOTHING",
            params![blob.hash, blob.content],
        )
        .map_err(err)?;
    }
    for hash in checkpoint.before_hashes() {
        tx.execute(
            "INSERT OR IGNORE INTO checkpoint_blob_refs (checkpoint_id, hash) VALUES (?1, ?2)",
            params![id, hash],
        )
        .map_err(err)?;
    }
    let keep = i64::try_from(keep_last).unwrap_or(i64::MAX);
    let stale = "SELECT id FROM checkpoints WHERE session_id = ?1
                 ORDER BY turn DESC LIMIT -1 OFFSET ?2";
    tx.execute(
        &format!("DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN ({stale})"),
        params![session.as_str(), keep],
    )
    .map_err(err)?;
    tx.execute(
        &format!("DELETE FROM checkpoints WHERE id IN ({stale})"),
        params![session.as_str(), keep],
    )
    .map_err(err)?;
    tx.execute(DROP_ORPHAN_BLOBS, []).map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(id)
}

/// The session's checkpoints, oldest turn first.
pub fn list(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
) -> Result<Vec<StoredCheckpoint>, MemoryError> {
    let err =
        |source| super::error::db(path, &format!("list the checkpoints of {session}"), source);
    let mut stmt = conn
        .prepare_cached("SELECT id, payload FROM checkpoints WHERE session_id = ?1 ORDER BY turn")
        .map_err(err)?;
    let rows = stmt
        .query_map([session.as_str()], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rows.into_iter()
        .map(|(id, payload)| {
            let checkpoint =
                serde_json::from_str(&payload).map_err(|source| MemoryError::Corrupt {
                    location: super::error::location(path),
                    what: format!("checkpoint {id} of {session}"),
                    message: source.to_string(),
                })?;
            Ok(StoredCheckpoint {
                id,
                session_id: session.clone(),
                checkpoint,
            })
        })
        .collect()
}

/// The content stored under `hash`.
pub fn blob(conn: &Connection, path: &Path, hash: &str) -> Result<Option<Vec<u8>>, MemoryError> {
    conn.prepare_cached("SELECT content FROM checkpoint_blobs WHERE hash = ?1")
        .and_then(|mut stmt| stmt.query_row([hash], |row| row.get(0)).optional())
        .map_err(|source| super::error::db(path, "read a checkpoint content", source))
}

/// Deletes the session's checkpoints from `from_turn` on (all of them for 0).
pub fn delete_from(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    from_turn: u64,
) -> Result<(), MemoryError> {
    let err = |source| super::error::db(path, &format!("delete checkpoints of {session}"), source);
    let turn = i64::try_from(from_turn).unwrap_or(i64::MAX);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    tx.execute(
        "DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN
         (SELECT id FROM checkpoints WHERE session_id = ?1 AND turn >= ?2)",
        params![session.as_str(), turn],
    )
    .map_err(err)?;
    tx.execute(
        "DELETE FROM checkpoints WHERE session_id = ?1 AND turn >= ?2",
        params![session.as_str(), turn],
    )
    .map_err(err)?;
    tx.execute(DROP_ORPHAN_BLOBS, []).map_err(err)?;
    tx.commit().map_err(err)
}

/// Deletes the session's messages after `keep_through`, and a summary covering any.
pub fn truncate(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    keep_through: u64,
) -> Result<(), MemoryError> {
    let err = |source| super::error::db(path, &format!("rewind the messages of {session}"), source);
    let keep = i64::try_from(keep_through).unwrap_or(i64::MAX);
    // A sequence is at most 2^32 - 1 (the low half of a message's key).
    let keep_key = keep.min(0xFFFF_FFFF);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    tx.execute(
        concat!(
            "DELETE FROM conversation_events WHERE id > ",
            first_message_key!(),
            " | ?2 AND id <= ",
            last_message_key!()
        ),
        params![session.as_str(), keep_key],
    )
    .map_err(err)?;
    tx.execute(
        "UPDATE sessions SET last_sequence = MIN(last_sequence, ?2), updated_at = ?3
         WHERE session_id = ?1",
        params![session.as_str(), keep, now_ms()],
    )
    .map_err(err)?;
    tx.execute(
        "UPDATE session_state SET summary = NULL, covers_through = 0, epoch = epoch + 1,
         updated_at = ?3 WHERE session_id = ?1 AND covers_through > ?2",
        params![session.as_str(), keep, now_ms()],
    )
    .map_err(err)?;
    tx.commit().map_err(err)
}
