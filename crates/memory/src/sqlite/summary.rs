//! The rolling summary with its epoch compare-and-swap.

use std::path::Path;

use oxydra_types::SessionId;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::now_ms;
use crate::error::MemoryError;
use crate::traits::SessionSummary;

/// The stored summary of `session`, or the default.
pub fn load_summary(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
) -> Result<SessionSummary, MemoryError> {
    conn.prepare_cached(
        "SELECT summary, covers_through, epoch FROM session_state WHERE session_id = ?1",
    )
    .and_then(|mut stmt| {
        stmt.query_row([session.as_str()], |row| {
            Ok(SessionSummary {
                text: row.get(0)?,
                covers_through: row.get::<_, i64>(1)?.max(0) as u64,
                epoch: row.get::<_, i64>(2)?.max(0) as u64,
            })
        })
        .optional()
    })
    .map(Option::unwrap_or_default)
    .map_err(|source| super::error::db(path, &format!("load summary of {session}"), source))
}

/// Store a summary if the epoch is still `expected_epoch`; the new epoch, or `None`.
pub fn store_summary(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    expected_epoch: u64,
    text: &str,
    covers_through: u64,
) -> Result<Option<u64>, MemoryError> {
    let err = |source| super::error::db(path, &format!("store summary of {session}"), source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let current: i64 = tx
        .query_row(
            "SELECT epoch FROM session_state WHERE session_id = ?1",
            [session.as_str()],
            |row| row.get(0),
        )
        .optional()
        .map_err(err)?
        .unwrap_or(0);
    if current.max(0) as u64 != expected_epoch {
        return Ok(None);
    }
    let next = current + 1;
    tx.execute(
        "INSERT INTO session_state (session_id, summary, covers_through, epoch, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (session_id) DO UPDATE
         SET summary = excluded.summary, covers_through = excluded.covers_through,
             epoch = excluded.epoch, updated_at = excluded.updated_at",
        params![
            session.as_str(),
            text,
            i64::try_from(covers_through).unwrap_or(i64::MAX),
            next,
            now_ms()
        ],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(Some(next as u64))
}
