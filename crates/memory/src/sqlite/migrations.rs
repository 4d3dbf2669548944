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
    // 8: messages in a table B-tree, keyed by the session's number and the sequence.
    // In the `WITHOUT ROWID` table of migration 1 a row is a key of an index B-tree,
    // whose cells hold at most ~1,000 bytes of a 4 KiB page: a tool's output of 1–4 KiB
    // spilled its rest into an overflow page of its own, mostly empty, and an append
    // wrote one such page per message (a 20-turn run of eight reads a turn: 256
    // overflow pages, 3.3 KiB of each unused). A table B-tree keeps up to ~4,000 bytes
    // of a row in its leaf. Its key, `id`, is `(number << 32) | sequence`, `number`
    // being the session's own (unique, from 1): a session's messages stay one run of
    // the one B-tree, in sequence order, as before, with no second index to write.
    "
    ALTER TABLE sessions ADD COLUMN number INTEGER;
    INSERT INTO sessions (session_id, created_at, updated_at, last_sequence)
        SELECT session_id, min(created_at), max(created_at), max(sequence)
        FROM conversation_events
        WHERE session_id NOT IN (SELECT session_id FROM sessions)
        GROUP BY session_id;
    UPDATE sessions SET number = ranked.number
        FROM (SELECT session_id, row_number() OVER (ORDER BY created_at, session_id) AS number
              FROM sessions) AS ranked
        WHERE sessions.session_id = ranked.session_id;
    CREATE UNIQUE INDEX sessions_by_number ON sessions(number);
    CREATE TABLE conversation_events_rows (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        sequence   INTEGER NOT NULL CHECK (sequence BETWEEN 1 AND 4294967295),
        role       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    INSERT INTO conversation_events_rows (id, session_id, sequence, role, payload, created_at)
        SELECT (s.number << 32) | e.sequence, e.session_id, e.sequence, e.role, e.payload,
               e.created_at
        FROM conversation_events AS e JOIN sessions AS s USING (session_id)
        ORDER BY 1;
    DROP TABLE conversation_events;
    ALTER TABLE conversation_events_rows RENAME TO conversation_events;
    ",
];

/// SQL for the key of session `?1`'s first possible message (migration 8): a message is
/// keyed `(number << 32) | sequence`, `number` being its session's. Statements take a
/// session's messages as a range of that one key, through `concat!`.
macro_rules! first_message_key {
    () => {
        "((SELECT number FROM sessions WHERE session_id = ?1) << 32)"
    };
}
pub(super) use first_message_key;

/// SQL for the key of session `?1`'s last possible message: a sequence is at most
/// 2^32 − 1, the low half of the key (migration 8).
macro_rules! last_message_key {
    () => {
        "(((SELECT number FROM sessions WHERE session_id = ?1) << 32) | 4294967295)"
    };
}
pub(super) use last_message_key;

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
    fn a_version_7_database_keeps_its_messages_keyed_by_session_number_and_sequence() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in MIGRATIONS.iter().take(7) {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        // `ses_b` was created first; `ses_a`'s rows have no session row (kept anyway).
        conn.execute("INSERT INTO sessions VALUES ('ses_b', 3, 4, 2)", [])
            .unwrap();
        for (session, sequence) in [("ses_b", 2), ("ses_a", 2), ("ses_b", 1), ("ses_a", 1)] {
            conn.execute(
                "INSERT INTO conversation_events VALUES (?1, ?2, 'user', ?3, 5)",
                rusqlite::params![
                    session,
                    sequence,
                    format!(r#"{{"role":"user","content":"{session}/{sequence}"}}"#)
                ],
            )
            .unwrap();
        }
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let numbers: Vec<(String, i64, i64)> = conn
            .prepare("SELECT session_id, number, last_sequence FROM sessions ORDER BY number")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            numbers,
            [("ses_b".to_owned(), 1, 2), ("ses_a".to_owned(), 2, 2)]
        );
        let rows: Vec<(i64, String)> = conn
            .prepare("SELECT id, payload FROM conversation_events ORDER BY id")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected = [
            (1, "ses_b", 1),
            (1, "ses_b", 2),
            (2, "ses_a", 1),
            (2, "ses_a", 2),
        ]
        .map(|(number, session, sequence)| {
            (
                (number << 32) | sequence,
                format!(r#"{{"role":"user","content":"{session}/{sequence}"}}"#),
            )
        });
        assert_eq!(rows, expected);
        // Read back through the store's own query, in order, each session its own.
        for session in ["ses_a", "ses_b"] {
            let read = super::super::messages::messages(
                &conn,
                Path::new(":memory:"),
                &oxydra_types::SessionId::from(session),
            )
            .unwrap();
            let texts: Vec<(u64, Option<String>)> = read
                .iter()
                .map(|stored| (stored.sequence, stored.message.content.clone()))
                .collect();
            assert_eq!(
                texts,
                [
                    (1, Some(format!("{session}/1"))),
                    (2, Some(format!("{session}/2")))
                ]
            );
        }
        // A message's key is its session's and its sequence: stored twice, it conflicts.
        let duplicate = conn.execute(
            "INSERT INTO conversation_events (id, session_id, sequence, role, payload, created_at)
             VALUES ((2 << 32) | 2, 'ses_a', 2, 'user', 'again', 6)",
            [],
        );
        assert!(duplicate.is_err());
        // A sequence that would spill into the session's number is refused.
        let too_far = conn.execute(
            "INSERT INTO conversation_events (id, session_id, sequence, role, payload, created_at)
             VALUES (3 << 32, 'ses_c', 4294967296, 'user', 'x', 6)",
            [],
        );
        assert!(too_far.is_err());
    }

    #[test]
    fn a_message_of_a_few_kib_is_kept_in_its_leaf_page_without_overflow() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let payload = "x".repeat(3000);
        for sequence in 1..=16 {
            conn.execute(
                "INSERT INTO conversation_events (id, session_id, sequence, role, payload, created_at)
                 VALUES ((1 << 32) | ?1, 'ses_a', ?1, 'tool', ?2, 5)",
                rusqlite::params![sequence, payload],
            )
            .unwrap();
        }
        let overflow: i64 = conn
            .query_row(
                "SELECT count(*) FROM dbstat WHERE name = 'conversation_events' \
                 AND pagetype = 'overflow'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(overflow, 0);
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
