//! The schema, as numbered migrations tracked in `PRAGMA user_version`.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::MemoryError;

/// Migration `n` (1-based) brings the schema from version `n - 1` to `n`.
const MIGRATIONS: &[&str] = &[
    // 1: sessions, their messages, their summary state, and indexed chunks.
    "
    CREATE TABLE sessions (
        session_id    TEXT PRIMARY KEY NOT NULL,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        last_sequence INTEGER NOT NULL
    ) WITHOUT ROWID;

    CREATE TABLE conversation_events (
        session_id TEXT NOT NULL,
        sequence   INTEGER NOT NULL,
        role       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, sequence)
    ) WITHOUT ROWID;

    CREATE TABLE session_state (
        session_id     TEXT PRIMARY KEY NOT NULL,
        summary        TEXT,
        covers_through INTEGER NOT NULL DEFAULT 0,
        epoch          INTEGER NOT NULL DEFAULT 0,
        updated_at     INTEGER NOT NULL
    ) WITHOUT ROWID;

    CREATE TABLE chunks (
        id         INTEGER PRIMARY KEY,
        session_id TEXT,
        text       TEXT NOT NULL,
        model      TEXT NOT NULL,
        dims       INTEGER NOT NULL,
        embedding  BLOB NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX chunks_by_session ON chunks(session_id);

    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, content = 'chunks', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
    CREATE TRIGGER chunks_after_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER chunks_after_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    CREATE TRIGGER chunks_after_update AFTER UPDATE OF text ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
    END;
    ",
    // 2: session leases, so that a session has one writer at a time.
    "
    CREATE TABLE session_leases (
        session_id  TEXT PRIMARY KEY NOT NULL,
        owner       TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        host        TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL
    ) WITHOUT ROWID;
    ",
    // 3: what each session runs with (model, system prompt, agent). Sessions stored
    // before have none: they list no model and continue with the caller's prompt.
    "
    CREATE TABLE session_meta (
        session_id    TEXT PRIMARY KEY NOT NULL,
        model         TEXT NOT NULL,
        system_prompt TEXT,
        agent         TEXT,
        updated_at    INTEGER NOT NULL
    ) WITHOUT ROWID;
    ",
    // 4: the workspace each session worked in, so that `--continue` picks the newest
    // session of the current workspace. Sessions stored before have none.
    "
    ALTER TABLE session_meta ADD COLUMN workspace TEXT;
    ",
    // 5: workspace checkpoints, one per changing turn, and the file contents they
    // need, stored once by content hash.
    "
    CREATE TABLE checkpoints (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn       INTEGER NOT NULL,
        payload    TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (session_id, turn)
    );
    CREATE TABLE checkpoint_blobs (
        hash    TEXT PRIMARY KEY NOT NULL,
        content BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE checkpoint_blob_refs (
        checkpoint_id INTEGER NOT NULL,
        hash          TEXT NOT NULL,
        PRIMARY KEY (checkpoint_id, hash)
    ) WITHOUT ROWID;
    CREATE INDEX checkpoint_blob_refs_by_hash ON checkpoint_blob_refs(hash);
    ",
    // 6: the session a session replays (`oxydra replay`). Sessions stored before are
    // replays of nothing.
    "
    ALTER TABLE session_meta ADD COLUMN replay_of TEXT;
    ",
    // 7: intents and outcomes of side-effecting tool calls, keyed by idempotency key,
    // so that a resume after a crash never repeats a side effect blindly.
    "
    CREATE TABLE tool_intents (
        idempotency_key TEXT PRIMARY KEY NOT NULL,
        session_id      TEXT NOT NULL,
        call_id         TEXT NOT NULL,
        tool            TEXT NOT NULL,
        args_digest     TEXT NOT NULL,
        state_before    TEXT,
        created_at      INTEGER NOT NULL,
        outcome         TEXT,
        result_digest   TEXT,
        finished_at     INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX tool_intents_by_session ON tool_intents(session_id, created_at);
    ",
];

/// The schema version this code writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Bring the database at `path` up to [`SCHEMA_VERSION`] in one transaction; refuse a
/// database from a newer build.
pub fn migrate(conn: &mut Connection, path: &Path) -> Result<(), MemoryError> {
    let err = |source| super::error::db(path, "migrate schema", source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    let found: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(err)?;
    if found > SCHEMA_VERSION {
        return Err(MemoryError::SchemaTooNew {
            location: super::error::location(path),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let pending = MIGRATIONS.iter().enumerate().skip(found.max(0) as usize);
    for (index, sql) in pending {
        tracing::info!(path = %path.display(), version = index + 1, "applying memory schema migration");
        tx.execute_batch(sql).map_err(err)?;
    }
    if found < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
    }
    tx.commit().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_once_and_is_idempotent() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    #[test]
    fn a_version_2_database_keeps_its_sessions_and_gains_session_meta() {
        let mut conn = Connection::open_in_memory().unwrap();
        // The schema as version 2 left it, with one stored session.
        for sql in MIGRATIONS.iter().take(2) {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.execute("INSERT INTO sessions VALUES ('ses_old', 1, 2, 1)", [])
            .unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let listed = super::super::messages::list_sessions(&conn, Path::new(":memory:")).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].session_id.as_str(), "ses_old");
        assert_eq!(
            (listed[0].model.as_deref(), listed[0].agent.as_deref()),
            (None, None)
        );
        let meta = super::super::meta::load(
            &conn,
            Path::new(":memory:"),
            &oxydra_types::SessionId::from("ses_old"),
        )
        .unwrap();
        assert_eq!(meta, None);
    }

    #[test]
    fn a_version_3_database_keeps_its_metas_and_gains_a_workspace_column() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in MIGRATIONS.iter().take(3) {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute("INSERT INTO sessions VALUES ('ses_old', 1, 2, 1)", [])
            .unwrap();
        conn.execute(
            "INSERT INTO session_meta VALUES ('ses_old', 'm', 'p', NULL, 2)",
            [],
        )
        .unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let listed = super::super::messages::list_sessions(&conn, Path::new(":memory:")).unwrap();
        assert_eq!(
            (listed[0].model.as_deref(), listed[0].workspace.as_deref()),
            (Some("m"), None)
        );
    }

    #[test]
    fn refuses_a_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let error = migrate(&mut conn, Path::new("/x/memory.db")).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, MemoryError::SchemaTooNew { .. }));
        assert!(
            text.contains("/x/memory.db") && text.contains("newer"),
            "{text}"
        );
    }
}
