//! Opening a SQLite connection with Oxydra's pragmas.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::config::SqliteConfig;
use super::migrations::migrate;
use super::new_database::Created;
use super::new_database_sync::PendingSync;
use crate::error::MemoryError;

/// Open (creating if needed) the database at `path`: a new one from the image of the
/// current schema (`new_database`), owner-only file modes, busy timeout,
/// `synchronous`, WAL, then the schema migrations (none for a new database). `None`
/// opens a private in-memory database.
///
/// On a new database made from the image everything it runs only reads (the image is
/// in WAL mode at the current version); the [`PendingSync`] of that image must be
/// waited for before the connection's first write. It is empty otherwise.
pub(super) fn open_connection(
    path: Option<&Path>,
    config: &SqliteConfig,
) -> Result<(Connection, PendingSync), MemoryError> {
    let shown = path.unwrap_or(Path::new(":memory:"));
    let err = |action: &'static str| move |source| super::error::db(shown, action, source);
    let mut pending = PendingSync::none();
    if let Some(path) = path {
        // A new database starts from the image of the current schema; should that
        // fail, the file is created empty below and the migrations build the schema.
        match super::new_database::create_if_absent(path) {
            Ok(Created::FromImage(sync)) => {
                pending = sync;
                super::file_mode::tighten_existing(path);
            }
            Ok(Created::AlreadyThere) => super::file_mode::secure_database_file(path),
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "a new database starts empty");
                super::file_mode::secure_database_file(path);
            }
        }
    }
    let mut conn = match path {
        Some(path) => Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err("open"))?,
        None => Connection::open_in_memory().map_err(err("open"))?,
    };
    conn.busy_timeout(config.busy_timeout)
        .map_err(err("set busy timeout"))?;
    // Before the switch to WAL: on a new file the switch is a write through a rollback
    // journal, which under SQLite's default `FULL` syncs the journal twice; under the
    // configured level it syncs as that level says (one fsync fewer with `NORMAL`, on
    // the way to a run's first request). The level is the connection's and holds across
    // the switch.
    // The first statement reads the file's header: a file that is not a database fails
    // here.
    conn.pragma_update(None, "synchronous", config.synchronous.as_pragma())
        .map_err(err("read the file as a database (setting synchronous)"))?;
    if path.is_some() {
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(err("enable WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %shown.display(), mode, "could not enable WAL journal");
        }
    }
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(err("enable foreign keys"))?;
    conn.set_prepared_statement_cache_capacity(32);
    migrate(&mut conn, shown)?;
    Ok((conn, pending))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sqlite::config::Synchronous;

    fn pragma(conn: &Connection, name: &str) -> String {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|v| format!("{v:?}"))
        .unwrap()
    }

    #[test]
    fn file_databases_get_wal_synchronous_and_busy_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let normal = open_connection(Some(&dir.path().join("n.db")), &SqliteConfig::default())
            .unwrap()
            .0;
        assert_eq!(pragma(&normal, "journal_mode"), "Text(\"wal\")");
        assert_eq!(pragma(&normal, "synchronous"), "Integer(1)");
        assert_eq!(pragma(&normal, "busy_timeout"), "Integer(5000)");
        let config = SqliteConfig {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_millis(250),
            ..SqliteConfig::default()
        };
        let full = open_connection(Some(&dir.path().join("f.db")), &config)
            .unwrap()
            .0;
        assert_eq!(pragma(&full, "synchronous"), "Integer(2)");
        assert_eq!(pragma(&full, "busy_timeout"), "Integer(250)");
    }

    #[test]
    fn a_new_database_is_the_schema_image_and_runs_no_migration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let conn = open_connection(Some(&path), &SqliteConfig::default())
            .unwrap()
            .0;
        assert_eq!(pragma(&conn, "journal_mode"), "Text(\"wal\")");
        assert_eq!(
            pragma(&conn, "user_version"),
            format!("Integer({})", super::super::migrations::SCHEMA_VERSION)
        );
        // Migrations would have written the schema to the WAL, and the switch to WAL
        // the first page to the file; the file is the image, untouched.
        assert_eq!(
            std::fs::read(&path).unwrap(),
            super::super::new_database::IMAGE
        );
        conn.execute("INSERT INTO sessions (session_id, created_at, updated_at, last_sequence) VALUES ('ses_a', 1, 2, 0)", [])
            .unwrap();
        drop(conn);
        let reopened = open_connection(Some(&path), &SqliteConfig::default())
            .unwrap()
            .0;
        let stored: i64 = reopened
            .query_row("SELECT count(*) FROM sessions", [], |row| row.get(0))
            .unwrap();
        assert_eq!(stored, 1);
    }

    #[test]
    fn an_empty_file_of_the_same_name_is_migrated_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let conn = open_connection(Some(&path), &SqliteConfig::default())
            .unwrap()
            .0;
        assert_eq!(
            pragma(&conn, "user_version"),
            format!("Integer({})", super::super::migrations::SCHEMA_VERSION)
        );
        assert_eq!(pragma(&conn, "journal_mode"), "Text(\"wal\")");
    }

    #[cfg(unix)]
    #[test]
    fn the_database_and_its_wal_and_shm_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let conn = open_connection(Some(&path), &SqliteConfig::default())
            .unwrap()
            .0;
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        for name in ["m.db", "m.db-wal", "m.db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }
}
