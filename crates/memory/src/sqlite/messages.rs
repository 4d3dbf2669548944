//! Sessions and their messages.

use std::path::Path;

use oxydra_types::{Message, SessionId};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::migrations::{first_message_key, last_message_key};
use super::{leases, now_ms};
use crate::error::MemoryError;
use crate::lease_decision::check_write;
use crate::message_codec::{decode_message, encode_messages, single_sequence, stored_count};
use crate::traits::{SessionInfo, StoredMessage};

/// Append `message` to `session` in one committed transaction; returns its sequence.
///
/// The session row holds the last sequence; bumping it and inserting the event happen
/// under SQLite's write lock (`BEGIN IMMEDIATE`), so sequences are gap-free even across
/// processes sharing the file.
pub fn append(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    message: &Message,
    held: Option<&str>,
    max_bytes: usize,
) -> Result<u64, MemoryError> {
    let sequences = append_many(
        conn,
        path,
        session,
        std::slice::from_ref(message),
        held,
        max_bytes,
    )?;
    single_sequence(&sequences, &super::error::location(path), session)
}

/// Append `messages` to `session` in order, in one committed transaction (all or
/// none); returns their sequences.
///
/// `held` is the owner of the lease the caller holds on the session, if any: while
/// another owner holds a live lease the append is refused, inside the same transaction,
/// so a run whose lease lapsed and was taken over cannot write between the new
/// holder's messages. A message over `max_bytes` as stored refuses the whole append
/// ([`MemoryError::MessageTooLarge`]).
pub fn append_many(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
    messages: &[Message],
    held: Option<&str>,
    max_bytes: usize,
) -> Result<Vec<u64>, MemoryError> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let payloads = encode_messages(messages, &super::error::location(path), session, max_bytes)?;
    let err = |source| super::error::db(path, &format!("append to session {session}"), source);
    let now = now_ms();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    check_write(leases::stored_lease(&tx, session).map_err(err)?, held, now)?;
    // One upsert takes the batch's sequences: a new session takes the next number
    // (`sessions_by_number` makes the `max` a lookup) and sequences 1..=n; an existing
    // one bumps `last_sequence` by n. Its messages are keyed `(number << 32) | sequence`.
    let count = i64::try_from(messages.len()).unwrap_or(i64::MAX);
    let (last, number): (i64, i64) = tx
        .prepare_cached(
            "INSERT INTO sessions (session_id, created_at, updated_at, last_sequence, number)
             VALUES (?1, ?2, ?2, ?3, (SELECT coalesce(max(number), 0) + 1 FROM sessions))
             ON CONFLICT (session_id) DO UPDATE
             SET last_sequence = last_sequence + excluded.last_sequence,
                 updated_at = max(updated_at, excluded.updated_at)
             RETURNING last_sequence, number",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![session.as_str(), now, count], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
        })
        .map_err(err)?;
    let first = last.saturating_sub(count).saturating_add(1);
    let mut sequences = Vec::with_capacity(messages.len());
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO conversation_events (id, session_id, sequence, role, payload, created_at)
             VALUES ((?1 << 32) | ?3, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(err)?;
    for ((message, payload), sequence) in messages.iter().zip(&payloads).zip(first..) {
        insert
            .execute(params![
                number,
                session.as_str(),
                sequence,
                message.role.as_str(),
                payload,
                now
            ])
            .map_err(err)?;
        sequences.push(stored_count(sequence));
    }
    drop(insert);
    tx.commit().map_err(err)?;
    Ok(sequences)
}

/// The stored messages of `session`, in sequence order.
pub fn messages(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
) -> Result<Vec<StoredMessage>, MemoryError> {
    let err = |source| super::error::db(path, &format!("read session {session}"), source);
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT sequence, payload, created_at FROM conversation_events WHERE id BETWEEN ",
            first_message_key!(),
            " AND ",
            last_message_key!(),
            " ORDER BY id"
        ))
        .map_err(err)?;
    let mut rows = stmt.query([session.as_str()]).map_err(err)?;
    let location = super::error::location(path);
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(err)? {
        let sequence: i64 = row.get(0).map_err(err)?;
        let created_at_ms: i64 = row.get(2).map_err(err)?;
        // Parse straight from SQLite's buffer, without copying the payload first.
        let message = match row.get_ref(1).map_err(err)? {
            ValueRef::Text(bytes) => {
                decode_message(sequence, bytes, created_at_ms, &location, session)?
            }
            other => {
                return Err(MemoryError::Corrupt {
                    location,
                    what: format!("session {session} message {sequence}"),
                    message: format!("payload stored as {:?}, not text", other.data_type()),
                });
            }
        };
        out.push(message);
    }
    Ok(out)
}

/// Whether `session` has a stored message.
pub fn session_exists(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
) -> Result<bool, MemoryError> {
    conn.prepare_cached("SELECT 1 FROM sessions WHERE session_id = ?1")
        .and_then(|mut stmt| stmt.query_row([session.as_str()], |_| Ok(())).optional())
        .map(|found| found.is_some())
        .map_err(|source| super::error::db(path, &format!("look up session {session}"), source))
}

/// Every session, most recently updated first.
pub fn list_sessions(conn: &Connection, path: &Path) -> Result<Vec<SessionInfo>, MemoryError> {
    let err = |source| super::error::db(path, "list sessions", source);
    let mut stmt = conn
        .prepare_cached(
            "SELECT s.session_id, s.created_at, s.updated_at, s.last_sequence, m.model, m.agent,
                    m.workspace, m.replay_of
             FROM sessions s LEFT JOIN session_meta m ON m.session_id = s.session_id
             ORDER BY s.updated_at DESC, s.session_id DESC",
        )
        .map_err(err)?;
    let rows = stmt
        .query_map([], |row| {
            Ok(SessionInfo {
                session_id: SessionId::from(row.get::<_, String>(0)?),
                created_at_ms: row.get(1)?,
                updated_at_ms: row.get(2)?,
                messages: stored_count(row.get(3)?),
                model: row.get(4)?,
                agent: row.get(5)?,
                workspace: row.get(6)?,
                replay_of: row.get(7)?,
            })
        })
        .map_err(err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err)
}

/// Delete `session`'s messages, state, meta, chunks, checkpoints and intents (the FTS index follows by
/// trigger).
pub fn delete_session(
    conn: &mut Connection,
    path: &Path,
    session: &SessionId,
) -> Result<(), MemoryError> {
    let err = |source| super::error::db(path, &format!("delete session {session}"), source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    for sql in [
        concat!(
            "DELETE FROM conversation_events WHERE id BETWEEN ",
            first_message_key!(),
            " AND ",
            last_message_key!()
        ),
        "DELETE FROM session_state WHERE session_id = ?1",
        "DELETE FROM session_meta WHERE session_id = ?1",
        "DELETE FROM chunks WHERE session_id = ?1",
        "DELETE FROM checkpoint_blob_refs WHERE checkpoint_id IN
         (SELECT id FROM checkpoints WHERE session_id = ?1)",
        "DELETE FROM checkpoints WHERE session_id = ?1",
        "DELETE FROM tool_intents WHERE session_id = ?1",
        "DELETE FROM sessions WHERE session_id = ?1",
    ] {
        tx.execute(sql, [session.as_str()]).map_err(err)?;
    }
    tx.execute(super::checkpoints::DROP_ORPHAN_BLOBS, [])
        .map_err(err)?;
    tx.commit().map_err(err)
}
