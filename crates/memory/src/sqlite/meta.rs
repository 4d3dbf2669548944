//! What each session runs with: its [`SessionMeta`].

use std::path::Path;

use oxydra_types::SessionId;
use rusqlite::{Connection, OptionalExtension, params};

use super::now_ms;
use crate::error::MemoryError;
use crate::traits::SessionMeta;

/// Records `meta` for `session`, replacing what was there (one statement: atomic).
pub fn store(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
    meta: &SessionMeta,
) -> Result<(), MemoryError> {
    conn.prepare_cached(
        "INSERT INTO session_meta
             (session_id, model, system_prompt, agent, updated_at, workspace, replay_of)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (session_id) DO UPDATE
         SET model = excluded.model, system_prompt = excluded.system_prompt,
             agent = excluded.agent, updated_at = excluded.updated_at,
             workspace = excluded.workspace, replay_of = excluded.replay_of",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            session.as_str(),
            meta.model,
            meta.system_prompt,
            meta.agent,
            now_ms(),
            meta.workspace,
            meta.replay_of
        ])
    })
    .map(drop)
    .map_err(|source| super::error::db(path, &format!("store the meta of {session}"), source))
}

/// The meta recorded for `session`, if any.
pub fn load(
    conn: &Connection,
    path: &Path,
    session: &SessionId,
) -> Result<Option<SessionMeta>, MemoryError> {
    conn.prepare_cached(
        "SELECT model, system_prompt, agent, workspace, replay_of FROM session_meta
         WHERE session_id = ?1",
    )
    .and_then(|mut stmt| {
        stmt.query_row([session.as_str()], |row| {
            Ok(SessionMeta {
                model: row.get(0)?,
                system_prompt: row.get(1)?,
                agent: row.get(2)?,
                workspace: row.get(3)?,
                replay_of: row.get(4)?,
            })
        })
        .optional()
    })
    .map_err(|source| super::error::db(path, &format!("load the meta of {session}"), source))
}
