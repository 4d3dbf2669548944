//! Oxydra's own files, which the file tools refuse: a model that could write a
//! configuration file could grant itself power at the next start, and one that could
//! read the database could read every other session.
//!
//! Any file named `oxydra.toml` is configuration, wherever it lies. The embedding
//! program adds the exact files it uses: the configuration file, the SQLite database
//! (its `-wal`, `-shm` and `-journal` siblings come with it) and the trust store.
//! Paths are compared case-insensitively, so `OXYDRA.TOML` on a case-insensitive file
//! system is refused too.

use std::path::{Path, PathBuf};

use crate::error::ToolError;

/// The file name that is always configuration, compared case-insensitively.
pub const CONFIG_FILE_NAME: &str = "oxydra.toml";

/// Suffixes SQLite appends to a database's name for the files beside it.
const SQLITE_SIBLINGS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What a protected file is, which decides what is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedKind {
    /// Configuration: writing it is refused; reading is allowed.
    Config,
    /// The session database: reading and writing are refused.
    Database,
    /// The record of trusted configuration files: reading and writing are refused.
    TrustStore,
}

impl ProtectedKind {
    fn describe(self) -> &'static str {
        match self {
            Self::Config => "Oxydra's own configuration",
            Self::Database => "Oxydra's session database",
            Self::TrustStore => "Oxydra's record of trusted configuration files",
        }
    }

    fn refuses_reads(self) -> bool {
        !matches!(self, Self::Config)
    }
}

/// One protected file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// The path as it was given, made absolute.
    given: PathBuf,
    /// The path as resolved when it was added, lower-cased.
    folded: String,
    /// Its file name, lower-cased.
    name: String,
    kind: ProtectedKind,
}

/// The files the file tools refuse (see the module docs). The default protects every
/// file named `oxydra.toml` and nothing else.
///
/// ```
/// use std::path::Path;
/// use oxydra_tools::{ProtectedKind, ProtectedPaths};
///
/// let protected = ProtectedPaths::default().with(ProtectedKind::Database, "/data/oxydra.db");
/// assert!(protected.check_write(Path::new("/ws/sub/OXYDRA.toml"), "sub/OXYDRA.toml").is_err());
/// assert!(protected.check_read(Path::new("/ws/oxydra.toml"), "oxydra.toml").is_ok());
/// assert!(protected.check_read(Path::new("/data/oxydra.db-wal"), "x").is_err());
/// assert!(protected.check_write(Path::new("/ws/notes.md"), "notes.md").is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    entries: Vec<Entry>,
}

impl ProtectedPaths {
    /// Adds `path` as a file of `kind` (a database brings its SQLite siblings). The
    /// path is made absolute and its directory canonicalised when it exists, as the
    /// file tools resolve theirs.
    #[must_use]
    pub fn with(mut self, kind: ProtectedKind, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let given = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if kind == ProtectedKind::Database {
            for suffix in SQLITE_SIBLINGS {
                let mut sibling = given.clone().into_os_string();
                sibling.push(suffix);
                self.push(kind, PathBuf::from(sibling));
            }
        }
        self.push(kind, given);
        self
    }

    fn push(&mut self, kind: ProtectedKind, given: PathBuf) {
        let entry = Entry {
            folded: fold(&comparable(&given)),
            name: given
                .file_name()
                .map(|name| name.to_string_lossy().to_lowercase())
                .unwrap_or_default(),
            given,
            kind,
        };
        if !self.entries.contains(&entry) {
            self.entries.push(entry);
        }
    }

    /// What `path` (absolute, resolved) is, if it is protected.
    pub fn kind_of(&self, path: &Path) -> Option<ProtectedKind> {
        let folded = fold(path);
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        // The exact files first: the database or trust store may well be named
        // anything, and reading them is refused too. A file whose directory did not
        // exist when it was added (a database not yet created) is resolved again.
        let exact = self.entries.iter().find(|entry| {
            entry.folded == folded
                || (entry.name == name && fold(&comparable(&entry.given)) == folded)
        });
        if let Some(entry) = exact {
            return Some(entry.kind);
        }
        (name == CONFIG_FILE_NAME).then_some(ProtectedKind::Config)
    }

    /// Refuses writing (or editing) `path`, the resolved absolute path of a file tool;
    /// `shown` is how the call named it.
    pub fn check_write(&self, path: &Path, shown: &str) -> Result<(), ToolError> {
        match self.kind_of(path) {
            Some(kind) => Err(refusal(kind, shown, "changed")),
            None => Ok(()),
        }
    }

    /// Refuses reading `path` when it is the database or the trust store.
    pub fn check_read(&self, path: &Path, shown: &str) -> Result<(), ToolError> {
        match self.kind_of(path) {
            Some(kind) if kind.refuses_reads() => Err(refusal(kind, shown, "read")),
            _ => Ok(()),
        }
    }

    /// Whether reading `path` is refused (for tools that read many files and skip
    /// those they may not).
    pub fn refuses_read(&self, path: &Path) -> bool {
        self.kind_of(path).is_some_and(ProtectedKind::refuses_reads)
    }
}

fn refusal(kind: ProtectedKind, shown: &str, verb: &'static str) -> ToolError {
    ToolError::Protected {
        path: shown.to_owned(),
        what: kind.describe(),
        verb,
    }
}

/// `path` absolute, with its directory canonicalised when that exists.
fn comparable(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map_or_else(|_| absolute.clone(), |dir| dir.join(name)),
        _ => absolute,
    }
}

/// The path as a string compared without regard to case.
fn fold(path: &Path) -> String {
    path.to_string_lossy().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_oxydra_toml_is_configuration_in_any_case() {
        let protected = ProtectedPaths::default();
        for path in [
            "/ws/oxydra.toml",
            "/ws/deep/dir/Oxydra.TOML",
            "/ws/OXYDRA.TOML",
        ] {
            let err = protected.check_write(Path::new(path), "x").unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("refused: `x` is Oxydra's own configuration"),
                "{err}"
            );
            assert!(protected.check_read(Path::new(path), "x").is_ok());
        }
        for path in [
            "/ws/oxydra.toml.bak",
            "/ws/my-oxydra.toml",
            "/ws/oxydra.toml/x",
        ] {
            assert!(
                protected.check_write(Path::new(path), "x").is_ok(),
                "{path}"
            );
        }
    }

    #[test]
    fn the_database_its_siblings_and_the_trust_store_refuse_reads_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let protected = ProtectedPaths::default()
            .with(ProtectedKind::Database, root.join("state/sessions.sqlite"))
            .with(ProtectedKind::TrustStore, root.join("trust.toml"))
            .with(ProtectedKind::Config, root.join("my-config.toml"));
        for name in [
            "state/sessions.sqlite",
            "state/sessions.sqlite-wal",
            "state/sessions.sqlite-shm",
            "state/Sessions.SQLITE-journal",
            "trust.toml",
        ] {
            let path = root.join(name);
            assert!(protected.check_write(&path, name).is_err(), "{name}");
            let err = protected.check_read(&path, name).unwrap_err();
            assert!(err.to_string().contains("may not be read"), "{err}");
            assert!(protected.refuses_read(&path));
        }
        let config = root.join("my-config.toml");
        assert!(protected.check_write(&config, "my-config.toml").is_err());
        assert!(protected.check_read(&config, "my-config.toml").is_ok());
        assert!(
            protected
                .check_write(&root.join("state/other.sqlite"), "x")
                .is_ok()
        );
    }

    #[test]
    fn a_directory_created_after_the_list_is_resolved_when_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        // `link/later` does not exist yet: the path is kept as given.
        let protected = ProtectedPaths::default()
            .with(ProtectedKind::Database, dir.path().join("link/later/o.db"));
        std::fs::create_dir(dir.path().join("real/later")).unwrap();
        let resolved = dir
            .path()
            .canonicalize()
            .unwrap()
            .join("real/later/o.db-wal");
        assert_eq!(protected.kind_of(&resolved), Some(ProtectedKind::Database));
        let other = dir.path().canonicalize().unwrap().join("real/later/p.db");
        assert_eq!(protected.kind_of(&other), None);
    }

    #[test]
    fn relative_and_symlinked_directories_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let protected =
            ProtectedPaths::default().with(ProtectedKind::Database, dir.path().join("link/o.db"));
        let resolved = real.canonicalize().unwrap().join("o.db");
        assert_eq!(protected.kind_of(&resolved), Some(ProtectedKind::Database));
    }
}
