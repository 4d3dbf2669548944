//! The SQL of [`IntentStore`] on PostgreSQL (the SQLite store's `tool_intents`).

use async_trait::async_trait;
use oxydra_memory::{
    IntentOutcome, IntentStatus, IntentStore, MemoryError, StoredIntent, ToolIntent,
};
use oxydra_types::{CallId, SessionId};
use tokio_postgres::Row;

use super::PostgresMemory;
use crate::database::PostgresDatabase;

const COLUMNS: &str = "idempotency_key, session_id, call_id, tool, args_digest, state_before,
     created_at, outcome, result_digest, finished_at";

/// The intent of `row` (in [`COLUMNS`] order) with its outcome.
fn read(db: &PostgresDatabase, action: &str, row: &Row) -> Result<StoredIntent, MemoryError> {
    let get_err = |e: tokio_postgres::Error| db.error(action, &e);
    let intent = ToolIntent {
        key: row.try_get(0).map_err(get_err)?,
        session_id: SessionId::from(row.try_get::<_, String>(1).map_err(get_err)?),
        call_id: CallId::from(row.try_get::<_, String>(2).map_err(get_err)?),
        tool: row.try_get(3).map_err(get_err)?,
        args_digest: row.try_get(4).map_err(get_err)?,
        before: row.try_get(5).map_err(get_err)?,
        created_at_ms: row.try_get(6).map_err(get_err)?,
    };
    let outcome = match row.try_get::<_, Option<String>>(7).map_err(get_err)? {
        None => None,
        Some(name) => {
            let status = IntentStatus::parse(&name).ok_or_else(|| MemoryError::Corrupt {
                location: db.location().to_owned(),
                what: format!("intent {} of {}", intent.key, intent.session_id),
                message: format!("unknown outcome `{name}`"),
            })?;
            Some(IntentOutcome {
                status,
                result_digest: row
                    .try_get::<_, Option<String>>(8)
                    .map_err(get_err)?
                    .unwrap_or_default(),
                finished_at_ms: row
                    .try_get::<_, Option<i64>>(9)
                    .map_err(get_err)?
                    .unwrap_or_default(),
            })
        }
    };
    Ok(StoredIntent { intent, outcome })
}

#[async_trait]
impl IntentStore for PostgresMemory {
    async fn store_intent(&self, intent: &ToolIntent) -> Result<(), MemoryError> {
        let db = &self.db;
        let action = format!(
            "store the intent of call {} of {}",
            intent.call_id, intent.session_id
        );
        let client = db.client().await?;
        client
            .execute(
                "INSERT INTO tool_intents (idempotency_key, session_id, call_id, tool,
                     args_digest, state_before, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (idempotency_key) DO UPDATE SET
                     session_id = EXCLUDED.session_id, call_id = EXCLUDED.call_id,
                     tool = EXCLUDED.tool, args_digest = EXCLUDED.args_digest,
                     state_before = EXCLUDED.state_before, created_at = EXCLUDED.created_at,
                     outcome = NULL, result_digest = NULL, finished_at = NULL",
                &[
                    &intent.key,
                    &intent.session_id.as_str(),
                    &intent.call_id.as_str(),
                    &intent.tool,
                    &intent.args_digest,
                    &intent.before,
                    &intent.created_at_ms,
                ],
            )
            .await
            .map_err(|e| db.error(&action, &e))?;
        Ok(())
    }

    async fn store_intent_outcome(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &IntentOutcome,
    ) -> Result<bool, MemoryError> {
        let db = &self.db;
        let action = format!("store the outcome of intent {key} of {session}");
        let client = db.client().await?;
        let changed = client
            .execute(
                "UPDATE tool_intents SET outcome = $3, result_digest = $4, finished_at = $5
                 WHERE session_id = $1 AND idempotency_key = $2",
                &[
                    &session.as_str(),
                    &key,
                    &outcome.status.as_str(),
                    &outcome.result_digest,
                    &outcome.finished_at_ms,
                ],
            )
            .await
            .map_err(|e| db.error(&action, &e))?;
        Ok(changed > 0)
    }

    async fn intent(
        &self,
        session: &SessionId,
        key: &str,
    ) -> Result<Option<StoredIntent>, MemoryError> {
        let db = &self.db;
        let action = format!("read intent {key} of {session}");
        let client = db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM tool_intents
                     WHERE session_id = $1 AND idempotency_key = $2"
                ),
                &[&session.as_str(), &key],
            )
            .await
            .map_err(|e| db.error(&action, &e))?;
        row.map(|row| read(db, &action, &row)).transpose()
    }

    async fn intents(&self, session: &SessionId) -> Result<Vec<StoredIntent>, MemoryError> {
        list(&self.db, session, false).await
    }

    async fn unfinished_intents(
        &self,
        session: &SessionId,
    ) -> Result<Vec<ToolIntent>, MemoryError> {
        let listed = list(&self.db, session, true).await?;
        Ok(listed.into_iter().map(|stored| stored.intent).collect())
    }
}

/// The session's intents, oldest first; only those without an outcome when
/// `unfinished`.
async fn list(
    db: &PostgresDatabase,
    session: &SessionId,
    unfinished: bool,
) -> Result<Vec<StoredIntent>, MemoryError> {
    let action = format!("list the intents of {session}");
    let only = if unfinished {
        "AND outcome IS NULL"
    } else {
        ""
    };
    let client = db.client().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {COLUMNS} FROM tool_intents WHERE session_id = $1 {only}
                 ORDER BY created_at, idempotency_key"
            ),
            &[&session.as_str()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    rows.iter().map(|row| read(db, &action, row)).collect()
}
