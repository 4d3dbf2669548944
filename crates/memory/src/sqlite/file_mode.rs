//! Owner-only permissions for database files: the database holds whole conversations
//! and tool results, so nobody but its owner may read it.
//!
//! A database file Oxydra creates is made `0600` before SQLite first opens it (SQLite
//! then gives its `-wal` and `-shm` files the database's mode). An existing database,
//! `-wal` or `-shm` file readable or writable by group or others is tightened to `0600`
//! on open, with a warning naming it. Failing to change a mode (a file owned by someone
//! else) is a warning, not an error. Elsewhere than Unix this does nothing.

use std::path::Path;

/// The mode of a database file and its companions.
pub const DATABASE_FILE_MODE: u32 = 0o600;

/// The mode of a directory Oxydra creates to hold a database.
pub const DATABASE_DIR_MODE: u32 = 0o700;

/// Creates `path` empty with mode `0600` if it does not exist, and tightens it, and
/// its `-wal` / `-shm` companions, to `0600` where they allow group or others access.
/// A new database another store or process has just created from the schema's image
/// and not yet synced is synced first, so that nothing is written to it before its
/// bytes are on the disk (see `new_database_sync`). Problems are logged as warnings;
/// the open that follows reports any real failure.
pub fn secure_database_file(path: &Path) {
    #[cfg(unix)]
    {
        super::new_database_sync::settle(path);
        unix::secure(path);
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Tightens an existing `path` and its `-wal` / `-shm` companions to `0600` where they
/// allow group or others access, as [`secure_database_file`] does, creating nothing.
pub(super) fn tighten_existing(path: &Path) {
    #[cfg(unix)]
    unix::tighten_all(path);
    #[cfg(not(unix))]
    let _ = path;
}

/// Creates `dir` and its missing parents with mode `0700` (an existing directory is
/// left as it is).
///
/// # Errors
/// The I/O error of creating a directory.
pub fn create_database_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DATABASE_DIR_MODE);
    }
    builder.create(dir)
}

#[cfg(unix)]
mod unix {
    use std::fs::{OpenOptions, Permissions};
    use std::io::ErrorKind;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    use std::path::{Path, PathBuf};

    use super::DATABASE_FILE_MODE;

    pub(super) fn secure(path: &Path) {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(DATABASE_FILE_MODE)
            .open(path)
        {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "could not create the database file owner-only");
            }
        }
        tighten_all(path);
    }

    pub(super) fn tighten_all(path: &Path) {
        for file in [
            path.to_path_buf(),
            companion(path, "-wal"),
            companion(path, "-shm"),
        ] {
            tighten(&file);
        }
    }

    fn companion(path: &Path, suffix: &str) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    /// Sets `file` to `0600` when group or others have any access; regular files only.
    fn tighten(file: &Path) {
        let Ok(metadata) = std::fs::metadata(file) else {
            return;
        };
        let mode = metadata.permissions().mode() & 0o777;
        if !metadata.is_file() || mode & 0o077 == 0 {
            return;
        }
        match std::fs::set_permissions(file, Permissions::from_mode(DATABASE_FILE_MODE)) {
            Ok(()) => tracing::warn!(
                path = %file.display(),
                was = format!("{mode:o}"),
                "database file was readable by others; its mode is now 600"
            ),
            Err(error) => tracing::warn!(
                path = %file.display(),
                was = format!("{mode:o}"),
                %error,
                "database file is readable by others and its mode could not be changed"
            ),
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_database_file_is_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        secure_database_file(&path);
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }

    #[test]
    fn wide_existing_files_and_companions_are_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        for name in ["old.db", "old.db-wal", "old.db-shm"] {
            let file = dir.path().join(name);
            std::fs::write(&file, b"x").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        secure_database_file(&path);
        for name in ["old.db", "old.db-wal", "old.db-shm"] {
            assert_eq!(mode(&dir.path().join(name)), 0o600, "{name}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn created_directories_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        create_database_dir(&nested).unwrap();
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&nested), 0o700);
    }
}
