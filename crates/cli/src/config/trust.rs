//! The trust store: which project configuration files (`./oxydra.toml`) the user has
//! trusted with `oxydra trust`, each by its path and the SHA-256 of its content (as
//! direnv does). A file whose content changed is untrusted again.
//!
//! The store is `<data dir>/oxydra/trusted.toml`, outside any workspace, so nothing a
//! model writes in the workspace can trust a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::CliError;

/// What the store says about a file's current content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Trusted with exactly this content.
    Trusted,
    /// Never trusted (or revoked).
    Untrusted,
    /// Trusted once, but its content changed since.
    Changed,
}

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustEntry {
    /// The file: its directory canonical, its own name as found (a symlink named
    /// `oxydra.toml` is keyed where it lies, not where it points).
    pub path: PathBuf,
    /// SHA-256 of the content that was trusted, in lower-case hex.
    pub sha256: String,
}

/// The file's layout.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    #[serde(default)]
    trusted: Vec<TrustEntry>,
}

/// The trusted files, as read from the store file at `path`.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    entries: Vec<TrustEntry>,
}

/// The store's file in the user data dir, if one is known.
pub fn default_store_path() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("oxydra").join("trusted.toml"))
}

/// The key a file is trusted under: absolute, with its directory canonicalised and its
/// own name kept.
pub fn key_of(file: &Path) -> PathBuf {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map_or_else(|_| absolute.clone(), |dir| dir.join(name)),
        _ => absolute,
    }
}

/// SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl TrustStore {
    /// Reads the store at `path`; a missing file is an empty store. A store that
    /// cannot be read or parsed is an error naming it (callers that only check trust
    /// treat it as trusting nothing).
    pub fn open(path: &Path) -> Result<Self, CliError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => {
                return Err(CliError::TrustStore {
                    path: path.to_path_buf(),
                    message: format!("cannot read: {error}"),
                });
            }
        };
        let file: StoreFile = toml::from_str(&text).map_err(|error| CliError::TrustStore {
            path: path.to_path_buf(),
            message: format!("not a valid trust store: {}", error.message().trim()),
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            entries: file.trusted,
        })
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every trusted file.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }

    /// Whether the file keyed `key` is trusted with the content `content`.
    pub fn verdict(&self, key: &Path, content: &[u8]) -> Verdict {
        match self.entries.iter().find(|entry| entry.path == key) {
            Some(entry) if entry.sha256 == sha256_hex(content) => Verdict::Trusted,
            Some(_) => Verdict::Changed,
            None => Verdict::Untrusted,
        }
    }

    /// Trusts the file keyed `key` with the content `content` (replacing what was
    /// trusted for it before).
    pub fn trust(&mut self, key: &Path, content: &[u8]) {
        let sha256 = sha256_hex(content);
        match self.entries.iter_mut().find(|entry| entry.path == key) {
            Some(entry) => entry.sha256 = sha256,
            None => self.entries.push(TrustEntry {
                path: key.to_path_buf(),
                sha256,
            }),
        }
    }

    /// Forgets the file keyed `key`; whether it was trusted.
    pub fn revoke(&mut self, key: &Path) -> bool {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.path != key);
        self.entries.len() != before
    }

    /// Writes the store: to a file beside it (readable by the user only), then renamed
    /// over it, so a crash never leaves half a store.
    pub fn save(&self) -> Result<(), CliError> {
        let io = |what: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| CliError::Io { what, path, source }
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io("cannot create the directory", dir))?;
        let body = toml::to_string(&StoreFile {
            trusted: self.entries.clone(),
        })
        .map_err(|error| CliError::TrustStore {
            path: self.path.clone(),
            message: format!("cannot render: {error}"),
        })?;
        let text = format!(
            "# Configuration files trusted with `oxydra trust`: path and SHA-256 of the\n\
             # trusted content. Edit with `oxydra trust` / `oxydra trust --revoke`.\n\n{body}"
        );
        let temporary = self
            .path
            .with_extension(format!("toml.{}.tmp", std::process::id()));
        let written = write_private(&temporary, text.as_bytes())
            .map_err(io("cannot write", &temporary))
            .and_then(|()| {
                std::fs::rename(&temporary, &self.path).map_err(io("cannot replace", &self.path))
            });
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written
    }
}

/// Writes `bytes` to a new file at `path` that only the user may read and write.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// What the store at `store` says about the project file at `path`, read as
/// `content`. A store that cannot be read, or no store at all, trusts nothing; the
/// reason is added to `warnings`.
pub fn verdict_of(
    path: &Path,
    content: &[u8],
    store: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Verdict {
    match store {
        None => {
            warnings.push(
                "no user data directory is known, so no project configuration can be trusted"
                    .to_owned(),
            );
            Verdict::Untrusted
        }
        Some(store) => match TrustStore::open(store) {
            Ok(store) => store.verdict(&key_of(path), content),
            Err(error) => {
                warnings.push(format!(
                    "{error}; project configuration files count as untrusted until it is \
                     fixed or removed"
                ));
                Verdict::Untrusted
            }
        },
    }
}

/// `path` as a shell word: as is when it holds only safe characters, else in single quotes.
pub fn shell_quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_in(dir: &Path) -> PathBuf {
        dir.join("oxydra").join("trusted.toml")
    }

    #[test]
    fn a_missing_store_trusts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::open(&store_in(dir.path())).unwrap();
        assert!(store.entries().is_empty());
        assert_eq!(
            store.verdict(Path::new("/p/oxydra.toml"), b"x"),
            Verdict::Untrusted
        );
    }

    #[test]
    fn trusted_content_survives_a_round_trip_and_a_change_untrusts_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = store_in(dir.path());
        let key = Path::new("/p/oxydra.toml");
        let mut store = TrustStore::open(&path).unwrap();
        store.trust(key, b"[runtime]\napprove = \"always\"\n");
        store.save().unwrap();

        let store = TrustStore::open(&path).unwrap();
        assert_eq!(
            store.verdict(key, b"[runtime]\napprove = \"always\"\n"),
            Verdict::Trusted
        );
        // One byte more is another file.
        assert_eq!(
            store.verdict(key, b"[runtime]\napprove = \"always\"\n "),
            Verdict::Changed
        );
        assert_eq!(
            store.verdict(
                Path::new("/q/oxydra.toml"),
                b"[runtime]\napprove = \"always\"\n"
            ),
            Verdict::Untrusted
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the store is private: {mode:o}");
        }
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["trusted.toml"]);
    }

    #[test]
    fn trusting_again_replaces_and_revoking_forgets() {
        let dir = tempfile::tempdir().unwrap();
        let path = store_in(dir.path());
        let key = Path::new("/p/oxydra.toml");
        let mut store = TrustStore::open(&path).unwrap();
        store.trust(key, b"one");
        store.trust(key, b"two");
        assert_eq!(store.entries().len(), 1);
        assert_eq!(store.verdict(key, b"two"), Verdict::Trusted);
        assert_eq!(store.verdict(key, b"one"), Verdict::Changed);
        assert!(store.revoke(key));
        assert!(!store.revoke(key));
        assert_eq!(store.verdict(key, b"two"), Verdict::Untrusted);
    }

    #[test]
    fn a_corrupt_store_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = store_in(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for text in ["[[trusted]\n", "[[trusted]]\npath = 3\n", "colour = 1\n"] {
            std::fs::write(&path, text).unwrap();
            let error = TrustStore::open(&path).unwrap_err();
            let message = error.to_string();
            assert!(message.contains("trusted.toml"), "{message}");
            assert!(message.contains("not a valid trust store"), "{message}");
        }
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        assert!(TrustStore::open(&path).is_err());
    }

    #[test]
    fn keys_canonicalise_the_directory_but_not_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("oxydra.toml"), "").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("via")).unwrap();
        std::os::unix::fs::symlink(real.join("oxydra.toml"), real.join("link.toml")).unwrap();
        let canonical = real.canonicalize().unwrap();
        assert_eq!(
            key_of(&dir.path().join("via/oxydra.toml")),
            canonical.join("oxydra.toml")
        );
        assert_eq!(
            key_of(&dir.path().join("via/link.toml")),
            canonical.join("link.toml")
        );
    }

    #[test]
    fn the_hash_is_sha256() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn paths_are_quoted_for_the_shell_when_needed() {
        assert_eq!(
            shell_quoted(Path::new("/ws/oxydra.toml")),
            "/ws/oxydra.toml"
        );
        assert_eq!(
            shell_quoted(Path::new("/my ws/it's/oxydra.toml")),
            "'/my ws/it'\\''s/oxydra.toml'"
        );
    }
}
