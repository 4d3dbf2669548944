//! A stat-first scan of the workspace: every entry's `lstat` (kind, size, mode,
//! inode, modification and change times, a symlink's target), and the content of
//! regular files held while it fits the budget. A scan taken with the previous one
//! reads again only the files whose stat changed, so the scan after a call costs one
//! walk of `lstat`s plus reading what the call changed.
//!
//! Nothing is followed through a symlink. `.git/objects` is skipped (see
//! [`SKIPPED_DIRS`]): git writes its objects once, by content hash, and never
//! changes one, so undoing a turn never needs them back.

use std::collections::BTreeMap;
use std::fs::{self, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxydra_types::EntryState;
use sha2::{Digest, Sha256};

/// Directories (relative to the workspace root) a scan does not enter.
pub const SKIPPED_DIRS: &[&str] = &[".git/objects"];

/// What decides whether an entry changed without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatKey {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl StatKey {
    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }
}

/// One scanned entry.
#[derive(Debug, Clone)]
pub(crate) struct Scanned {
    key: StatKey,
    /// Its state; a file's hash is empty until its content is known.
    pub(crate) state: EntryState,
    /// A file's content, when it was held.
    pub(crate) content: Option<Arc<Vec<u8>>>,
}

impl Scanned {
    /// Whether `other` is this entry unchanged (same stat).
    pub(crate) fn same_stat(&self, other: &Scanned) -> bool {
        self.key == other.key
    }

    /// A file's size (0 for anything else).
    pub(crate) fn size(&self) -> u64 {
        match self.state {
            EntryState::File { size, .. } => size,
            _ => 0,
        }
    }
}

/// The workspace at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(crate) entries: BTreeMap<String, Scanned>,
    held: u64,
}

impl Snapshot {
    /// How many entries the scan saw.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the scan saw no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of file content the snapshot holds.
    pub fn held_bytes(&self) -> u64 {
        self.held
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Scans `root` (absolute, canonical), reusing what `previous` knew of every entry
/// whose stat did not change and holding file contents up to `budget` bytes in all.
/// Blocking.
pub fn scan(root: &Path, previous: Option<&Snapshot>, budget: u64) -> io::Result<Snapshot> {
    let mut scanner = Scanner {
        root,
        previous,
        budget,
        snapshot: Snapshot::default(),
    };
    scanner.dir(PathBuf::new())?;
    Ok(scanner.snapshot)
}

struct Scanner<'a> {
    root: &'a Path,
    previous: Option<&'a Snapshot>,
    budget: u64,
    snapshot: Snapshot,
}

impl Scanner<'_> {
    fn dir(&mut self, rel: PathBuf) -> io::Result<()> {
        let mut names: Vec<_> = fs::read_dir(self.root.join(&rel))?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name())
            .collect();
        names.sort();
        for name in names {
            let child = rel.join(&name);
            let Some(key) = child.to_str().map(str::to_owned) else {
                // A name that is not UTF-8 cannot be stored: left out (documented).
                continue;
            };
            if SKIPPED_DIRS.contains(&key.as_str()) {
                continue;
            }
            let meta = match fs::symlink_metadata(self.root.join(&child)) {
                Ok(meta) => meta,
                // Removed while the walk ran: absent.
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err),
            };
            let is_dir = meta.is_dir();
            self.entry(&key, &child, &meta);
            if is_dir {
                self.dir(child)?;
            }
        }
        Ok(())
    }

    fn entry(&mut self, key: &str, rel: &Path, meta: &Metadata) {
        let stat = StatKey::of(meta);
        let kept = self
            .previous
            .and_then(|previous| previous.entries.get(key))
            .filter(|known| known.key == stat)
            .cloned();
        let scanned = match kept {
            Some(mut known) => {
                if let Some(content) = &known.content {
                    let len = content.len() as u64;
                    if self.snapshot.held.saturating_add(len) <= self.budget {
                        self.snapshot.held += len;
                    } else {
                        known.content = None;
                    }
                }
                known
            }
            None => self.fresh(rel, meta, stat),
        };
        self.snapshot.entries.insert(key.to_owned(), scanned);
    }

    fn fresh(&mut self, rel: &Path, meta: &Metadata, key: StatKey) -> Scanned {
        let mode = meta.permissions().mode() & 0o7777;
        let kind = meta.file_type();
        let (state, content) = if kind.is_dir() {
            (EntryState::Dir { mode }, None)
        } else if kind.is_symlink() {
            let target = fs::read_link(self.root.join(rel))
                .map(|target| target.to_string_lossy().into_owned())
                .unwrap_or_default();
            (EntryState::Symlink { target }, None)
        } else if kind.is_file() {
            let size = meta.size();
            let fits = self.snapshot.held.saturating_add(size) <= self.budget;
            let content = if fits {
                read_file(&self.root.join(rel), size).ok().map(Arc::new)
            } else {
                None
            };
            let hash = content
                .as_deref()
                .map(|bytes| content_hash(bytes))
                .unwrap_or_default();
            if let Some(bytes) = &content {
                self.snapshot.held += bytes.len() as u64;
            }
            (EntryState::File { hash, size, mode }, content)
        } else {
            (EntryState::Other, None)
        };
        Scanned {
            key,
            state,
            content,
        }
    }
}

/// Reads a regular file without following a symlink put in its place, nor blocking
/// on a FIFO swapped in.
fn read_file(path: &Path, size: u64) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The hash of a file as it is now (empty when it cannot be read). Blocking.
pub(crate) fn hash_now(path: &Path) -> String {
    read_file(path, 0)
        .map(|bytes| content_hash(&bytes))
        .unwrap_or_default()
}
