//! A new database file starts as a copy of an image of the current schema, instead of
//! an empty file that SQLite switches to WAL (a write through a rollback journal, three
//! fsyncs) and the migrations then fill (parsing every `CREATE` statement, FTS5's
//! shadow tables among them).
//!
//! `new_database.sqlite` beside this file is what [`migrate`](super::migrations::migrate)
//! makes of an empty file in WAL mode, checkpointed: `PRAGMA user_version` at
//! [`SCHEMA_VERSION`](super::migrations::SCHEMA_VERSION), the WAL bytes set in its
//! header. A test compares its schema and rows with those the migrations build and
//! fails when a migration is added without re-recording it
//! (`OXYDRA_RECORD_NEW_DATABASE=1 cargo test -p oxydra-memory new_database`).
//!
//! The copy is written to a temporary file beside the database (owner-only), then
//! hard-linked to the database's name, which fails if the name exists: a reader never
//! sees a half-written database, a file created meanwhile by another process is kept,
//! and a symbolic link at the name is never followed. The copy is synced while SQLite
//! opens it, and nothing is written to it before the sync is done
//! ([`new_database_sync`](super::new_database_sync)). Where it cannot be done (a
//! missing directory, a file system without hard links), the caller goes on as before:
//! an empty file and the migrations.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::new_database_sync::PendingSync;

/// The current schema as a database file.
pub(super) const IMAGE: &[u8] = include_bytes!("new_database.sqlite");

/// What a temporary name holds between the database's name and the creator's own
/// parts: `<database>.new-<pid>-<count>-<nanoseconds>`.
pub(super) const MARKER_INFIX: &str = ".new-";

/// What [`create_if_absent`] found.
#[derive(Debug)]
pub(super) enum Created {
    /// The database did not exist and now holds the image, which is being synced:
    /// wait for it before the first write.
    FromImage(PendingSync),
    /// Something already had the database's name; it is left as it was.
    AlreadyThere,
}

/// Creates the database at `path` from the image unless something has its name.
///
/// # Errors
/// The I/O error that kept the image from being written or linked (the database's
/// name is then still free); a temporary file it created is removed in every case.
pub(super) fn create_if_absent(path: &Path) -> std::io::Result<Created> {
    // The common case, an existing database, costs one `lstat`.
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(Created::AlreadyThere);
    }
    let temporary = temporary_name(path);
    let mut file = create_owner_only(&temporary)?;
    let mut linked = file.write_all(IMAGE);
    if cfg!(not(unix)) {
        // No link counts to find a marker by: synced before it has the name.
        linked = linked.and_then(|()| file.sync_all());
    }
    match linked.and_then(|()| std::fs::hard_link(&temporary, path)) {
        // The temporary name stays, as the marker, until the sync is done.
        Ok(()) => Ok(Created::FromImage(PendingSync::start(file, temporary))),
        Err(error) => {
            drop(file);
            let _ = std::fs::remove_file(&temporary);
            if error.kind() == ErrorKind::AlreadyExists {
                Ok(Created::AlreadyThere)
            } else {
                Err(error)
            }
        }
    }
}

/// `<database>.new-<pid>-<count>-<nanoseconds>`, in the database's directory (a hard
/// link cannot cross file systems); the count keeps two threads of one process apart.
fn temporary_name(path: &Path) -> PathBuf {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        "{MARKER_INFIX}{}-{count}-{nanos}",
        std::process::id()
    ));
    PathBuf::from(name)
}

/// A new file at `temporary`, owner-only.
fn create_owner_only(temporary: &Path) -> std::io::Result<std::fs::File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(super::file_mode::DATABASE_FILE_MODE);
    }
    options.open(temporary)
}

#[cfg(test)]
pub(super) mod tests {
    use rusqlite::Connection;
    use rusqlite::types::Value;

    use super::*;
    use crate::sqlite::migrations::{SCHEMA_VERSION, migrate};

    /// Creates the database at `path` from the image; its sync is still running.
    pub(in crate::sqlite) fn created_from_image(path: &Path) -> PendingSync {
        let Ok(Created::FromImage(sync)) = create_if_absent(path) else {
            panic!("no database created from the image at {}", path.display());
        };
        sync
    }

    /// What the migrations make of an empty file in WAL mode, checkpointed and closed.
    fn migrated_image(dir: &Path) -> Vec<u8> {
        let path = dir.join("migrated.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        migrate(&mut conn, &path).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        drop(conn);
        std::fs::read(&path).unwrap()
    }

    /// Everything the schema holds that a run could notice: the schema's rows (less
    /// the page each starts on), every table's rows, and the pragmas a file carries.
    fn dump(conn: &Connection) -> Vec<String> {
        let mut lines = Vec::new();
        for pragma in [
            "user_version",
            "page_size",
            "encoding",
            "auto_vacuum",
            "journal_mode",
        ] {
            let value: Value = conn
                .query_row(&format!("PRAGMA {pragma}"), [], |row| row.get(0))
                .unwrap();
            lines.push(format!("{pragma} = {value:?}"));
        }
        let mut schema = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name")
            .unwrap();
        let rows = schema
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>();
        for (kind, name, table, sql) in rows {
            lines.push(format!("{kind} {name} on {table}: {sql:?}"));
            let virtual_table = sql.as_deref().is_some_and(|sql| sql.contains("VIRTUAL"));
            if kind != "table" || virtual_table {
                continue;
            }
            let mut select = conn.prepare(&format!("SELECT * FROM \"{name}\"")).unwrap();
            let columns = select.column_count();
            let values = select
                .query_map([], |row| {
                    (0..columns)
                        .map(|index| row.get::<_, Value>(index))
                        .collect::<Result<Vec<_>, _>>()
                })
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>();
            lines.push(format!("  rows of {name}: {values:?}"));
        }
        lines
    }

    #[test]
    fn the_image_is_the_schema_the_migrations_build() {
        let dir = tempfile::tempdir().unwrap();
        let migrated = migrated_image(dir.path());
        if std::env::var_os("OXYDRA_RECORD_NEW_DATABASE").is_some() {
            let recorded =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sqlite/new_database.sqlite");
            std::fs::write(&recorded, &migrated).unwrap();
            return;
        }
        let image = dir.path().join("image.db");
        std::fs::write(&image, IMAGE).unwrap();
        let from_image = dump(&Connection::open(&image).unwrap());
        let from_migrations = dump(&Connection::open(dir.path().join("migrated.db")).unwrap());
        assert_eq!(
            from_image, from_migrations,
            "crates/memory/src/sqlite/new_database.sqlite is not the schema the migrations \
             build: re-record it with `OXYDRA_RECORD_NEW_DATABASE=1 cargo test -p \
             oxydra-memory new_database`"
        );
        assert!(
            from_image.contains(&format!("user_version = Integer({SCHEMA_VERSION})")),
            "{from_image:?}"
        );
    }

    #[test]
    fn the_image_is_in_wal_mode_with_nothing_left_in_a_wal() {
        // Bytes 18 and 19 of the header are the write and read versions: 2 is WAL.
        assert_eq!(IMAGE.get(..16), Some(&b"SQLite format 3\0"[..]));
        assert_eq!((IMAGE.get(18), IMAGE.get(19)), (Some(&2), Some(&2)));
        // The header's page count times the page size is the whole file: no page of
        // the schema was left in a WAL when it was recorded.
        let page_size = u32::from(u16::from_be_bytes([IMAGE[16], IMAGE[17]]));
        let pages = u32::from_be_bytes([IMAGE[28], IMAGE[29], IMAGE[30], IMAGE[31]]);
        assert_eq!(IMAGE.len(), (page_size * pages) as usize);
    }

    #[test]
    fn a_new_database_is_the_image_owner_only_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        created_from_image(&path).wait();
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("new.db")]);
    }

    #[test]
    fn an_existing_file_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.db");
        std::fs::write(&path, b"not a database").unwrap();
        assert!(matches!(create_if_absent(&path), Ok(Created::AlreadyThere)));
        assert_eq!(std::fs::read(&path).unwrap(), b"not a database");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_at_the_name_is_not_followed() {
        // An attacker's link to a file elsewhere: neither it nor its target is written.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let path = dir.path().join("linked.db");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(matches!(create_if_absent(&path), Ok(Created::AlreadyThere)));
        assert!(!target.exists());
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent").join("new.db");
        let error = create_if_absent(&path).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(!dir.path().join("absent").exists());
    }

    #[test]
    fn creators_racing_for_one_name_leave_one_whole_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raced.db");
        let barrier = std::sync::Barrier::new(8);
        let created: Vec<Created> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        create_if_absent(&path).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let first = created
            .iter()
            .filter(|c| matches!(c, Created::FromImage(_)))
            .count();
        assert_eq!(first, 1, "{created:?}");
        for created in created {
            if let Created::FromImage(sync) = created {
                sync.wait();
            }
        }
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
