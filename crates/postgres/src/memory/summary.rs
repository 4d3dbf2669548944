//! The rolling summary with its epoch compare-and-swap, each one statement.

use oxydra_memory::{MemoryError, SessionSummary};
use oxydra_types::SessionId;

use crate::database::PostgresDatabase;
use crate::now_ms;

/// The stored summary of `session`, or the default.
pub(super) async fn load(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<SessionSummary, MemoryError> {
    let action = format!("load summary of {session}");
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT summary, covers_through, epoch FROM session_state WHERE session_id = $1",
            &[&session.as_str()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let Some(row) = row else {
        return Ok(SessionSummary::default());
    };
    let read = || -> Result<SessionSummary, tokio_postgres::Error> {
        Ok(SessionSummary {
            text: row.try_get(0)?,
            covers_through: row.try_get::<_, i64>(1)?.max(0) as u64,
            epoch: row.try_get::<_, i64>(2)?.max(0) as u64,
        })
    };
    read().map_err(|e| db.error(&action, &e).into())
}

/// Stores a summary if the epoch is still `expected_epoch`; the new epoch, or `None`.
pub(super) async fn store(
    db: &PostgresDatabase,
    session: &SessionId,
    expected_epoch: u64,
    text: &str,
    covers_through: u64,
) -> Result<Option<u64>, MemoryError> {
    let action = format!("store summary of {session}");
    let covers = i64::try_from(covers_through).unwrap_or(i64::MAX);
    let expected = i64::try_from(expected_epoch).unwrap_or(i64::MAX);
    let client = db.client().await?;
    // The row is created by the first summary (epoch 0 → 1); after that the update
    // itself is the compare-and-swap.
    let row = if expected == 0 {
        client
            .query_opt(
                "INSERT INTO session_state (session_id, summary, covers_through, epoch, updated_at)
                 VALUES ($1, $2, $3, 1, $4)
                 ON CONFLICT (session_id) DO UPDATE
                 SET summary = excluded.summary, covers_through = excluded.covers_through,
                     epoch = session_state.epoch + 1, updated_at = excluded.updated_at
                 WHERE session_state.epoch = 0
                 RETURNING epoch",
                &[&session.as_str(), &text, &covers, &now_ms()],
            )
            .await
    } else {
        client
            .query_opt(
                "UPDATE session_state
                 SET summary = $2, covers_through = $3, epoch = epoch + 1, updated_at = $4
                 WHERE session_id = $1 AND epoch = $5
                 RETURNING epoch",
                &[&session.as_str(), &text, &covers, &now_ms(), &expected],
            )
            .await
    }
    .map_err(|e| db.error(&action, &e))?;
    row.map(|row| row.try_get::<_, i64>(0).map(|epoch| epoch.max(0) as u64))
        .transpose()
        .map_err(|e| db.error(&action, &e).into())
}
