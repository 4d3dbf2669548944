//! Sessions and their messages.

use oxydra_memory::{
    MemoryError, SessionInfo, StoredMessage, check_write, decode_message, encode_messages,
    stored_count,
};
use oxydra_types::{Message, SessionId};

use super::leases;
use crate::database::PostgresDatabase;
use crate::now_ms;

/// Appends `messages` to `session` in order, in one committed transaction (all or
/// none); returns their sequences.
///
/// The session row holds the last sequence: bumping it by the batch size and inserting
/// the events happen under the session's lock, so sequences are gap-free across every
/// worker. `held` is the owner of the lease the caller holds on the session, if any:
/// while another owner holds a live lease the append is refused inside the same
/// transaction, so a run whose lease lapsed and was taken over cannot write between the
/// new holder's messages. A message over `max_bytes` as stored refuses the whole
/// append ([`MemoryError::MessageTooLarge`]).
pub(super) async fn append_many(
    db: &PostgresDatabase,
    session: &SessionId,
    messages: &[Message],
    held: Option<&str>,
    max_bytes: usize,
) -> Result<Vec<u64>, MemoryError> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let payloads = encode_messages(messages, db.location(), session, max_bytes)?;
    let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
    let count = i64::try_from(messages.len()).unwrap_or(i64::MAX);
    let action = format!("append to session {session}");
    let now = now_ms();
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    leases::lock_session(db, &tx, session, &action).await?;
    check_write(
        leases::stored_lease(db, &tx, session, &action).await?,
        held,
        now,
    )?;
    let bump = tx
        .prepare_cached(
            "INSERT INTO sessions (session_id, created_at, updated_at, last_sequence)
             VALUES ($1, $2, $2, $3)
             ON CONFLICT (session_id) DO UPDATE
             SET last_sequence = sessions.last_sequence + excluded.last_sequence,
                 updated_at = greatest(sessions.updated_at, excluded.updated_at)
             RETURNING last_sequence",
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let last: i64 = tx
        .query_one(&bump, &[&session.as_str(), &now, &count])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db.error(&action, &e))?;
    let first = last - count + 1;
    let sequences: Vec<i64> = (first..=last).collect();
    let insert = tx
        .prepare_cached(
            "INSERT INTO conversation_events (session_id, sequence, role, payload, created_at)
             SELECT $1, sequence, role, payload, $5
             FROM unnest($2::BIGINT[], $3::TEXT[], $4::TEXT[]) AS batch (sequence, role, payload)",
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    tx.execute(
        &insert,
        &[&session.as_str(), &sequences, &roles, &payloads, &now],
    )
    .await
    .map_err(|e| db.error(&action, &e))?;
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(sequences.into_iter().map(stored_count).collect())
}

/// The stored messages of `session`, in sequence order.
pub(super) async fn messages(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<Vec<StoredMessage>, MemoryError> {
    let action = format!("read session {session}");
    let client = db.client().await?;
    let statement = client
        .prepare_cached(
            "SELECT sequence, payload, created_at FROM conversation_events
             WHERE session_id = $1 ORDER BY sequence",
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let rows = client
        .query(&statement, &[&session.as_str()])
        .await
        .map_err(|e| db.error(&action, &e))?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let sequence: i64 = row.try_get(0).map_err(|e| db.error(&action, &e))?;
        let payload: &str = row.try_get(1).map_err(|e| db.error(&action, &e))?;
        let created_at_ms: i64 = row.try_get(2).map_err(|e| db.error(&action, &e))?;
        out.push(decode_message(
            sequence,
            payload.as_bytes(),
            created_at_ms,
            db.location(),
            session,
        )?);
    }
    Ok(out)
}

/// Whether `session` has a stored message.
pub(super) async fn session_exists(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<bool, MemoryError> {
    let action = format!("look up session {session}");
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT 1 FROM sessions WHERE session_id = $1",
            &[&session.as_str()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    Ok(row.is_some())
}

/// Every session, most recently updated first.
pub(super) async fn list_sessions(db: &PostgresDatabase) -> Result<Vec<SessionInfo>, MemoryError> {
    let action = "list sessions";
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT s.session_id, s.created_at, s.updated_at, s.last_sequence, m.model, m.agent,
                    m.workspace, m.replay_of
             FROM sessions s LEFT JOIN session_meta m ON m.session_id = s.session_id
             ORDER BY s.updated_at DESC, s.session_id DESC",
            &[],
        )
        .await
        .map_err(|e| db.error(action, &e))?;
    rows.iter()
        .map(|row| {
            Ok(SessionInfo {
                session_id: SessionId::from(row.try_get::<_, String>(0)?),
                created_at_ms: row.try_get(1)?,
                updated_at_ms: row.try_get(2)?,
                messages: stored_count(row.try_get(3)?),
                model: row.try_get(4)?,
                agent: row.try_get(5)?,
                workspace: row.try_get(6)?,
                replay_of: row.try_get(7)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(|e| db.error(action, &e).into())
}

/// Deletes `session`'s messages, state, meta and chunks in one transaction.
pub(super) async fn delete_session(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<(), MemoryError> {
    let action = format!("delete session {session}");
    let mut client = db.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| db.error(&action, &e))?;
    leases::lock_session(db, &tx, session, &action).await?;
    for sql in [
        "DELETE FROM conversation_events WHERE session_id = $1",
        "DELETE FROM session_state WHERE session_id = $1",
        "DELETE FROM session_meta WHERE session_id = $1",
        "DELETE FROM chunks WHERE session_id = $1",
        super::checkpoints::DELETE_SESSION[0],
        super::checkpoints::DELETE_SESSION[1],
        "DELETE FROM tool_intents WHERE session_id = $1",
        "DELETE FROM sessions WHERE session_id = $1",
    ] {
        tx.execute(sql, &[&session.as_str()])
            .await
            .map_err(|e| db.error(&action, &e))?;
    }
    tx.execute(super::checkpoints::DROP_ORPHAN_BLOBS, &[])
        .await
        .map_err(|e| db.error(&action, &e))?;
    tx.commit().await.map_err(|e| db.error(&action, &e))?;
    Ok(())
}
