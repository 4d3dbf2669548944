//! The exact files the embedding program names: Oxydra's own (its configuration, the
//! session database, the trust store) and the files a trusted configuration runs.
//!
//! Each is kept in two forms: as given (absolute, its directory canonicalised, its own
//! name kept, so a symlink is known by where it lies) and as its canonical target when
//! it exists. A path matches when it is either form, so neither a link to a protected
//! file nor the target of a protected link can be written.

use std::path::{Path, PathBuf};

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
    /// A file (or working directory) a trusted configuration names as a command, an
    /// argument or a working directory, which Oxydra starts at its next run: writing it
    /// is refused (a trusted configuration may allow it, `chat` asks); reading is allowed.
    Launched,
}

impl ProtectedKind {
    /// What the file is, completing "`path` is …".
    pub(super) fn describe(self) -> &'static str {
        match self {
            Self::Config => "Oxydra's own configuration",
            Self::Database => "Oxydra's session database",
            Self::TrustStore => "Oxydra's record of trusted configuration files",
            Self::Launched => {
                "run by Oxydra: a trusted configuration names it as a command, argument or \
                 working directory"
            }
        }
    }

    /// Whether reading is refused too.
    pub(super) fn refuses_reads(self) -> bool {
        matches!(self, Self::Database | Self::TrustStore)
    }

    /// Whether it is one of Oxydra's own files, which nothing allows writing.
    pub(super) fn is_own(self) -> bool {
        !matches!(self, Self::Launched)
    }
}

/// One protected file or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// The path as it was given, made absolute.
    given: PathBuf,
    /// Its forms, lower-cased: as given with the directory canonical, and the canonical
    /// target (when it existed when added).
    forms: Vec<String>,
    /// Its file name, lower-cased.
    name: String,
    /// Whether everything beneath it is covered too.
    beneath: bool,
    pub(super) kind: ProtectedKind,
}

impl Entry {
    /// The entries for `path` as a `kind` (a database brings its SQLite siblings).
    pub(super) fn all(kind: ProtectedKind, path: &Path, beneath: bool) -> Vec<Self> {
        let given = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        // A symlink to a file not created yet (a database) is known by its target too.
        let mut bases = vec![given.clone()];
        if let Some(target) = link_target(&given) {
            bases.push(target);
        }
        let mut paths = Vec::new();
        for base in bases {
            if kind == ProtectedKind::Database {
                for suffix in SQLITE_SIBLINGS {
                    let mut sibling = base.clone().into_os_string();
                    sibling.push(suffix);
                    paths.push(PathBuf::from(sibling));
                }
            }
            paths.push(base);
        }
        paths
            .into_iter()
            .map(|given| Self::new(kind, given, beneath))
            .collect()
    }

    fn new(kind: ProtectedKind, given: PathBuf, beneath: bool) -> Self {
        let mut forms = vec![fold(&comparable(&given))];
        if let Ok(target) = given.canonicalize() {
            push_new(&mut forms, fold(&target));
        }
        Self {
            name: given
                .file_name()
                .map(|name| name.to_string_lossy().to_lowercase())
                .unwrap_or_default(),
            given,
            forms,
            beneath,
            kind,
        }
    }

    /// Whether `folded` (a lower-cased absolute path whose file name is `name`) is this
    /// entry or, for a directory, beneath it. A path whose directory did not exist when
    /// it was added (a database not yet created) is resolved again.
    pub(super) fn covers(&self, folded: &str, name: &str) -> bool {
        let under = |form: &str| {
            folded == form
                || (self.beneath
                    && folded
                        .strip_prefix(form)
                        .is_some_and(|rest| rest.starts_with('/')))
        };
        if self.forms.iter().any(|form| under(form)) {
            return true;
        }
        (self.beneath || self.name == name) && under(&fold(&comparable(&self.given)))
    }

    /// The forms of this entry that exist, as paths (for the sandbox's list).
    pub(super) fn existing(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        if self.given.symlink_metadata().is_ok() {
            found.push(comparable(&self.given));
        }
        if let Ok(target) = self.given.canonicalize()
            && !found.contains(&target)
        {
            found.push(target);
        }
        found
    }
}

/// Where the symlink `path` leads, followed a few links deep, even when the end does
/// not exist yet; `None` when `path` is no symlink.
fn link_target(path: &Path) -> Option<PathBuf> {
    let mut current = path.to_path_buf();
    let mut followed = false;
    for _ in 0..8 {
        let Ok(next) = std::fs::read_link(&current) else {
            break;
        };
        current = match current.parent() {
            Some(dir) => dir.join(next),
            None => next,
        };
        followed = true;
    }
    followed.then(|| comparable(&current))
}

fn push_new(forms: &mut Vec<String>, form: String) {
    if !forms.contains(&form) {
        forms.push(form);
    }
}

/// `path` absolute, with its directory canonicalised when that exists.
pub(super) fn comparable(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map_or_else(|_| absolute.clone(), |dir| dir.join(name)),
        _ => absolute,
    }
}

/// The path as a string compared without regard to case.
pub(super) fn fold(path: &Path) -> String {
    path.to_string_lossy().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(entries: &[Entry], path: &Path) -> bool {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        entries.iter().any(|entry| entry.covers(&fold(path), &name))
    }

    #[test]
    fn a_symlinked_file_is_covered_as_the_link_and_as_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("dotfiles")).unwrap();
        std::fs::write(root.join("dotfiles/oxydra-config"), "").unwrap();
        std::os::unix::fs::symlink(
            root.join("dotfiles/oxydra-config"),
            root.join("config.toml"),
        )
        .unwrap();
        let entries = Entry::all(ProtectedKind::Config, &root.join("config.toml"), false);
        assert!(covers(&entries, &root.join("config.toml")));
        assert!(covers(&entries, &root.join("DOTFILES/Oxydra-Config")));
        assert!(!covers(&entries, &root.join("dotfiles/other")));
        assert_eq!(
            entries[0].existing(),
            [
                root.join("config.toml"),
                root.join("dotfiles/oxydra-config")
            ]
        );
    }

    #[test]
    fn a_database_symlink_to_a_file_not_created_yet_covers_the_target_and_its_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("ws")).unwrap();
        std::os::unix::fs::symlink(root.join("ws/store"), root.join("db-link")).unwrap();
        let entries = Entry::all(ProtectedKind::Database, &root.join("db-link"), false);
        for path in [
            "db-link",
            "db-link-wal",
            "ws/store",
            "ws/store-wal",
            "ws/store-journal",
        ] {
            assert!(covers(&entries, &root.join(path)), "{path}");
        }
        assert!(!covers(&entries, &root.join("ws/other")));
    }

    #[test]
    fn a_directory_covers_what_is_beneath_it_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("tools")).unwrap();
        let entries = Entry::all(ProtectedKind::Launched, &root.join("tools"), true);
        assert!(covers(&entries, &root.join("tools")));
        assert!(covers(&entries, &root.join("tools/mcp.sh")));
        assert!(!covers(&entries, &root.join("tools-other/x")));
    }
}
