//! The SQL of [`IntentStore`] on SQLite: one row per idempotency key in
//! `tool_intents`, its outcome columns empty until the call has run.

use std::path::Path;

use async_trait::async_trait;
use oxydra_types::{CallId, SessionId};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::SqliteMemory;
use crate::error::MemoryError;
use crate::intents::{IntentOutcome, IntentStatus, IntentStore, StoredIntent, ToolIntent};

const COLUMNS: &str = "idempotency_key, session_id, call_id, tool, args_digest, state_before,
     created_at, outcome, result_digest, finished_at";

/// A row as read, before its outcome's name is checked.
struct RawIntent {
    intent: ToolIntent,
    outcome: Option<(String, Option<String>, Option<i64>)>,
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawIntent> {
    let outcome: Option<String> = row.get(7)?;
    Ok(RawIntent {
        intent: ToolIntent {
            key: row.get(0)?,
            session_id: SessionId::from(row.get::<_, String>(1)?),
            call_id: CallId::from(row.get::<_, String>(2)?),
            tool: row.get(3)?,
            args_digest: row.get(4)?,
            before: row.get(5)?,
            created_at_ms: row.get(6)?,
        },
        outcome: match outcome {
            Some(name) => Some((name, row.get(8)?, row.get(9)?)),
            None => None,
        },
    })
}

/// `raw` with its outcome checked: an unknown outcome name is corruption.
fn checked(path: &Path, raw: RawIntent) -> Result<StoredIntent, MemoryError> {
    let outcome = match raw.outcome {
        None => None,
        Some((name, digest, finished)) => {
            let status = IntentStatus::parse(&name).ok_or_else(|| MemoryError::Corrupt {
                location: super::error::location(path),
                what: format!("intent {} of {}", raw.intent.key, raw.intent.session_id),
                message: format!("unknown outcome `{name}`"),
            })?;
            Some(IntentOutcome {
                status,
                result_digest: digest.unwrap_or_default(),
                finished_at_ms: finished.unwrap_or_default(),
            })
        }
    };
    Ok(StoredIntent {
        intent: raw.intent,
        outcome,
    })
}

fn store(conn: &Connection, path: &Path, intent: &ToolIntent) -> Result<(), MemoryError> {
    conn.prepare_cached(
        "INSERT INTO tool_intents (idempotency_key, session_id, call_id, tool, args_digest,
             state_before, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (idempotency_key) DO UPDATE SET
             session_id = excluded.session_id, call_id = excluded.call_id,
             tool = excluded.tool, args_digest = excluded.args_digest,
             state_before = excluded.state_before, created_at = excluded.created_at,
             outcome = NULL, result_digest = NULL, finished_at = NULL",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            intent.key,
            intent.session_id.as_str(),
            intent.call_id.as_str(),
            intent.tool,
            intent.args_digest,
            intent.before,
            intent.created_at_ms,
        ])
    })
    .map(drop)
    .map_err(|source| {
        super::error::db(
            path,
            &format!(
                "store the intent of call {} of {}",
                intent.call_id, intent.session_id
            ),
            source,
        )
    })
}

fn store_outcome(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
    key: &str,
    outcome: &IntentOutcome,
) -> Result<bool, MemoryError> {
    conn.prepare_cached(
        "UPDATE tool_intents SET outcome = ?3, result_digest = ?4, finished_at = ?5
         WHERE session_id = ?1 AND idempotency_key = ?2",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            session.as_str(),
            key,
            outcome.status.as_str(),
            outcome.result_digest,
            outcome.finished_at_ms,
        ])
    })
    .map(|changed| changed > 0)
    .map_err(|source| {
        super::error::db(
            path,
            &format!("store the outcome of intent {key} of {session}"),
            source,
        )
    })
}

fn one(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
    key: &str,
) -> Result<Option<StoredIntent>, MemoryError> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tool_intents WHERE session_id = ?1 AND idempotency_key = ?2"
        ))
        .and_then(|mut stmt| {
            stmt.query_row(params![session.as_str(), key], raw)
                .optional()
        })
        .map_err(|source| {
            super::error::db(path, &format!("read intent {key} of {session}"), source)
        })?;
    found.map(|raw| checked(path, raw)).transpose()
}

fn list(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
    unfinished: bool,
) -> Result<Vec<StoredIntent>, MemoryError> {
    let err = |source| super::error::db(path, &format!("list the intents of {session}"), source);
    let only = if unfinished {
        "AND outcome IS NULL"
    } else {
        ""
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tool_intents WHERE session_id = ?1 {only}
             ORDER BY created_at, idempotency_key"
        ))
        .map_err(err)?;
    let rows = stmt
        .query_map([session.as_str()], raw)
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rows.into_iter().map(|raw| checked(path, raw)).collect()
}

#[async_trait]
impl IntentStore for SqliteMemory {
    async fn store_intent(&self, intent: &ToolIntent) -> Result<(), MemoryError> {
        let span = tracing::debug_span!("memory.store_intent", session_id = %intent.session_id, call_id = %intent.call_id);
        let intent = intent.clone();
        self.run(span, move |inner| {
            store(&inner.conn(), &inner.path, &intent)
        })
        .await
    }

    async fn store_intent_outcome(
        &self,
        session: &SessionId,
        key: &str,
        outcome: &IntentOutcome,
    ) -> Result<bool, MemoryError> {
        let span = tracing::debug_span!("memory.store_intent_outcome", session_id = %session);
        let (session, key, outcome) = (session.clone(), key.to_owned(), outcome.clone());
        self.run(span, move |inner| {
            store_outcome(&inner.conn(), &inner.path, &session, &key, &outcome)
        })
        .await
    }

    async fn intent(
        &self,
        session: &SessionId,
        key: &str,
    ) -> Result<Option<StoredIntent>, MemoryError> {
        let span = tracing::debug_span!("memory.intent", session_id = %session);
        let (session, key) = (session.clone(), key.to_owned());
        self.run(span, move |inner| {
            one(&inner.conn(), &inner.path, &session, &key)
        })
        .await
    }

    async fn intents(&self, session: &SessionId) -> Result<Vec<StoredIntent>, MemoryError> {
        let span = tracing::debug_span!("memory.intents", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            list(&inner.conn(), &inner.path, &session, false)
        })
        .await
    }

    async fn unfinished_intents(
        &self,
        session: &SessionId,
    ) -> Result<Vec<ToolIntent>, MemoryError> {
        let span = tracing::debug_span!("memory.unfinished_intents", session_id = %session);
        let session = session.clone();
        let listed = self
            .run(span, move |inner| {
                list(&inner.conn(), &inner.path, &session, true)
            })
            .await?;
        Ok(listed.into_iter().map(|stored| stored.intent).collect())
    }
}
