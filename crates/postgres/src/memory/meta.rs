//! What each session runs with: its [`SessionMeta`], each call one statement.

use oxydra_memory::{MemoryError, SessionMeta};
use oxydra_types::SessionId;

use crate::database::PostgresDatabase;
use crate::now_ms;

/// Records `meta` for `session`, replacing what was there.
pub(super) async fn store(
    db: &PostgresDatabase,
    session: &SessionId,
    meta: &SessionMeta,
) -> Result<(), MemoryError> {
    let action = format!("store the meta of {session}");
    let client = db.client().await?;
    client
        .execute(
            "INSERT INTO session_meta
                 (session_id, model, system_prompt, agent, updated_at, workspace, replay_of)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (session_id) DO UPDATE
             SET model = excluded.model, system_prompt = excluded.system_prompt,
                 agent = excluded.agent, updated_at = excluded.updated_at,
                 workspace = excluded.workspace, replay_of = excluded.replay_of",
            &[
                &session.as_str(),
                &meta.model,
                &meta.system_prompt,
                &meta.agent,
                &now_ms(),
                &meta.workspace,
                &meta.replay_of,
            ],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    Ok(())
}

/// The meta recorded for `session`, if any.
pub(super) async fn load(
    db: &PostgresDatabase,
    session: &SessionId,
) -> Result<Option<SessionMeta>, MemoryError> {
    let action = format!("load the meta of {session}");
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT model, system_prompt, agent, workspace, replay_of FROM session_meta
             WHERE session_id = $1",
            &[&session.as_str()],
        )
        .await
        .map_err(|e| db.error(&action, &e))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let read = || -> Result<SessionMeta, tokio_postgres::Error> {
        Ok(SessionMeta {
            model: row.try_get(0)?,
            system_prompt: row.try_get(1)?,
            agent: row.try_get(2)?,
            workspace: row.try_get(3)?,
            replay_of: row.try_get(4)?,
        })
    };
    read().map(Some).map_err(|e| db.error(&action, &e).into())
}
