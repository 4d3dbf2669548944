//! The trust store: which project configuration files (`./oxydra.toml`) the user has
//! trusted with `oxydra trust`, each by its path and the SHA-256 of its content (as
//! direnv does), and the SHA-256 of every file in the project it runs (a `command`,
//! argument or shell step's word naming a file, and every file in the directory of a
//! script a hook or MCP server runs: see `launched`). A file whose content changed, or
//! one of whose launched files changed, appeared or went away, is untrusted again.
//!
//! A record written before launched files were hashed holds none: when the file runs
//! any, it counts as changed (the safe choice) until `oxydra trust` is run again, and the
//! warning says so.
//!
//! The store is `<data dir>/oxydra/trusted.toml`, outside any workspace, so nothing a
//! model writes in the workspace can trust a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ConfigError;
#[cfg(test)]
use crate::shell_quoted;

/// What the store says about a file's current content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Trusted with exactly this content.
    Trusted,
    /// Never trusted (or revoked).
    Untrusted,
    /// Trusted once, but its content changed since.
    Changed,
    /// Its content is trusted, but this file it runs changed since (or was not
    /// recorded: trusted by an older Oxydra).
    LaunchedChanged(PathBuf),
}

/// The current SHA-256 of each file a configuration runs (`None`: it cannot be read).
pub type LaunchedHashes = [(PathBuf, Option<String>)];

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustEntry {
    /// The file: its directory canonical, its own name as found (a symlink named
    /// `oxydra.toml` is keyed where it lies, not where it points).
    pub path: PathBuf,
    /// SHA-256 of the content that was trusted, in lower-case hex.
    pub sha256: String,
    /// The files in the project it runs, with their SHA-256 when it was trusted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launched: Vec<FileHash>,
}

/// A file a trusted configuration runs, and its SHA-256 when it was trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHash {
    /// The file, canonical.
    pub path: PathBuf,
    /// SHA-256 of its content, in lower-case hex.
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
    pub fn open(path: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => {
                return Err(ConfigError::TrustStore {
                    path: path.to_path_buf(),
                    message: format!("cannot read: {error}"),
                });
            }
        };
        let file: StoreFile = toml::from_str(&text).map_err(|error| ConfigError::TrustStore {
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

    /// Whether the file keyed `key` is trusted with the content `content`, the files it
    /// runs having the hashes `launched` now.
    pub fn verdict(&self, key: &Path, content: &[u8], launched: &LaunchedHashes) -> Verdict {
        let Some(entry) = self.entries.iter().find(|entry| entry.path == key) else {
            return Verdict::Untrusted;
        };
        if entry.sha256 != sha256_hex(content) {
            return Verdict::Changed;
        }
        for (path, now) in launched {
            let recorded = entry.launched.iter().find(|file| &file.path == path);
            if recorded.map(|file| &file.sha256) != now.as_ref() || now.is_none() {
                return Verdict::LaunchedChanged(path.clone());
            }
        }
        // A file recorded then but gone now (removed from a script's directory) is a
        // change too.
        if let Some(gone) = entry
            .launched
            .iter()
            .find(|file| !launched.iter().any(|(path, _)| path == &file.path))
        {
            return Verdict::LaunchedChanged(gone.path.clone());
        }
        Verdict::Trusted
    }

    /// Trusts the file keyed `key` with the content `content` and the files it runs with
    /// the hashes `launched` (replacing what was trusted for it before).
    pub fn trust(&mut self, key: &Path, content: &[u8], launched: &LaunchedHashes) {
        let sha256 = sha256_hex(content);
        let launched: Vec<FileHash> = launched
            .iter()
            .filter_map(|(path, hash)| {
                hash.clone().map(|sha256| FileHash {
                    path: path.clone(),
                    sha256,
                })
            })
            .collect();
        self.entries.retain(|entry| entry.path != key);
        self.entries.push(TrustEntry {
            path: key.to_path_buf(),
            sha256,
            launched,
        });
    }

    /// Forgets the file keyed `key`; whether it was trusted.
    pub fn revoke(&mut self, key: &Path) -> bool {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.path != key);
        self.entries.len() != before
    }

    /// Writes the store: to a file beside it (readable by the user only), then renamed
    /// over it, so a crash never leaves half a store.
    pub fn save(&self) -> Result<(), ConfigError> {
        let io = |what: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| ConfigError::Io { what, path, source }
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io("cannot create the directory", dir))?;
        let body = toml::to_string(&StoreFile {
            trusted: self.entries.clone(),
        })
        .map_err(|error| ConfigError::TrustStore {
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
/// `content`, the files it runs having the hashes `launched` now. A store that cannot
/// be read, or no store at all, trusts nothing; the reason is added to `warnings`.
pub fn verdict_of(
    path: &Path,
    content: &[u8],
    launched: &LaunchedHashes,
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
            Ok(store) => store.verdict(&key_of(path), content, launched),
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

#[cfg(test)]
mod tests;
