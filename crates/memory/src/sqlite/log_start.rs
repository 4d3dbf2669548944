//! Starting a file database's write-ahead log at the open
//! ([`SqliteConfig::start_log_at_open`](super::SqliteConfig::start_log_at_open)).
//!
//! SQLite syncs a write-ahead log's header before the log's first frame (under
//! `synchronous = NORMAL` or more), and the Unix VFS syncs the log's directory at that
//! first sync. The close checkpoints and removes the log, so every run's first commit
//! paid both syncs on the way to its first model request (docs/performance.md, "The
//! log started at the open"). With the option, the connection's first user — a task
//! the open hands to the background, or whoever comes first — commits one page before
//! anything else runs on it: the database header, rewritten with the `user_version` read
//! in the same write transaction (`BEGIN IMMEDIATE`, so that no other process's
//! migration can come between the read and the write). The caller's first statement
//! waits for it behind the connection's lock, and by then it is usually done.

use rusqlite::{Connection, Transaction, TransactionBehavior};

/// Commits the database header as it is, so that the log exists, its header and
/// directory synced. Changes nothing a reader can see.
pub(super) fn start(conn: &Connection) -> rusqlite::Result<()> {
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    tx.pragma_update(None, "user_version", version)?;
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_len(path: &std::path::Path) -> u64 {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn the_log_gets_a_frame_and_the_version_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA user_version = 7; CREATE TABLE t (x)",
        )
        .unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        assert_eq!(wal_len(&path), 0);
        start(&conn).unwrap();
        // The 32-byte header, then one frame (a 24-byte frame header and a page).
        assert!(wal_len(&path) >= 32 + 24 + 4096, "{}", wal_len(&path));
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, 7);
        assert!(conn.is_autocommit());
    }

    #[test]
    fn a_database_another_connection_is_writing_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let ours = Connection::open(&path).unwrap();
        ours.execute_batch("PRAGMA journal_mode = WAL; PRAGMA user_version = 3")
            .unwrap();
        ours.busy_timeout(std::time::Duration::ZERO).unwrap();
        let theirs = Connection::open(&path).unwrap();
        theirs.execute_batch("BEGIN IMMEDIATE").unwrap();
        // Busy: it fails and rolls back, and the other's transaction goes on.
        assert!(start(&ours).is_err());
        assert!(ours.is_autocommit());
        theirs
            .execute_batch("PRAGMA user_version = 4; COMMIT")
            .unwrap();
        let version: i64 = ours
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, 4);
    }

    #[tokio::test]
    async fn the_option_starts_the_log_before_the_first_statement_and_only_it() {
        use crate::Memory;
        use crate::sqlite::{SqliteConfig, SqliteMemory};
        for start_log_at_open in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.db");
            let config = SqliteConfig {
                start_log_at_open,
                ..SqliteConfig::default()
            };
            let memory = SqliteMemory::open_async(&path, config).await.unwrap();
            // A read: the first use of the connection, after the log's start if any.
            assert!(memory.list_sessions().await.unwrap().is_empty());
            assert_eq!(wal_len(&path) > 0, start_log_at_open);
            let session = oxydra_types::SessionId::from("ses_log");
            let hello = oxydra_types::Message::user("hello");
            assert_eq!(memory.append(&session, &hello).await.unwrap(), 1);
            assert_eq!(memory.restore(&session).await.unwrap().len(), 1);
        }
    }
}
