//! Putting paths back as a checkpoint recorded them before its turn.
//!
//! The paths come from storage and are untrusted: each must be a plain relative path
//! (no `..`, no root, nothing empty) or the whole restore is refused before anything
//! is touched. Every change goes through a handle on its parent directory opened
//! beneath the workspace root following no symlink ([`WorkspaceDir::dir_below`]), so
//! a symlink anywhere on the way (one the checkpoint names, or one put in since) is
//! refused and nothing is written through it or outside the workspace.
//!
//! Before anything is written, each path's current state is compared with the state
//! the checkpoint recorded after its turn: a path someone else changed since is a
//! [`Conflict`], and nothing is restored unless the caller forces it. Files are
//! written beside their place and renamed over it, so a reader sees old or new.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
use std::sync::Arc;

use oxydra_types::{CheckpointEntry, EntryState};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::capture::Captured;
use super::conflict::Conflict;
use super::error::{CheckpointError, NotRestored};
use super::scan::content_hash;
use crate::beneath::WorkspaceDir;

/// What a restore did.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// The restore as a change of its own (before: the state it replaced; after: the
    /// state it wrote), with the contents it replaced: stored as a checkpoint, it
    /// lets the restore itself be undone.
    pub inverse: Captured,
}

/// The plain names of a checkpoint path, or why it is refused.
fn names(path: &str) -> Result<Vec<&OsStr>, CheckpointError> {
    let refused = |reason: &str| CheckpointError::UnsafePath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(refused("an empty path"));
    }
    let mut names = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            Component::ParentDir => return Err(refused("it climbs out with `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refused("it is absolute"));
            }
        }
    }
    if names.is_empty() {
        return Err(refused("it names the workspace root"));
    }
    Ok(names)
}

/// The entries that restore paths, checked: every path plain.
fn checked(
    entries: &[CheckpointEntry],
) -> Result<Vec<(&CheckpointEntry, Vec<&OsStr>)>, CheckpointError> {
    entries
        .iter()
        .map(|entry| names(&entry.path).map(|names| (entry, names)))
        .collect()
}

/// One path's parent handle and last name.
struct Place<'a> {
    dir: OwnedFd,
    name: &'a OsStr,
}

fn place<'a>(
    root: &WorkspaceDir,
    path: &str,
    names: &[&'a OsStr],
) -> Result<Option<Place<'a>>, CheckpointError> {
    let Some((name, parents)) = names.split_last() else {
        return Ok(None);
    };
    match root.dir_below(parents) {
        Ok(dir) => Ok(Some(Place { dir, name })),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) if crate::beneath::is_escape(&err) => Err(CheckpointError::UnsafePath {
            path: path.to_owned(),
            reason: "a symlink is on its way".to_owned(),
        }),
        Err(err) => Err(io_error(path, err)),
    }
}

fn io_error(path: &str, source: io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The state at `place` now, with a file's content.
fn current(place: Option<&Place<'_>>) -> io::Result<(EntryState, Option<Vec<u8>>)> {
    let Some(place) = place else {
        return Ok((EntryState::Absent, None));
    };
    let stat = match rustix::fs::statat(&place.dir, place.name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok((EntryState::Absent, None)),
        Err(err) => return Err(err.into()),
    };
    let mode = stat.st_mode & 0o7777;
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => (EntryState::Dir { mode }, None),
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(&place.dir, place.name, Vec::new())?;
            let target = target.to_string_lossy().into_owned();
            (EntryState::Symlink { target }, None)
        }
        FileType::RegularFile => {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(&place.dir, place.name, flags, Mode::empty())?;
            let mut bytes = Vec::new();
            std::fs::File::from(fd).read_to_end(&mut bytes)?;
            let state = EntryState::File {
                hash: content_hash(&bytes),
                size: bytes.len() as u64,
                mode,
            };
            (state, Some(bytes))
        }
        _ => (EntryState::Other, None),
    })
}

/// Whether `found` is what the checkpoint recorded after its turn.
fn unchanged(expected: &EntryState, found: &EntryState) -> bool {
    match (expected, found) {
        // A directory's mode is all that is compared (its entries are their own).
        (EntryState::Dir { .. }, EntryState::Dir { .. }) => expected == found,
        // A file the scan could not hash is compared by kind and mode only.
        (
            EntryState::File { hash, mode, .. },
            EntryState::File {
                hash: now, mode: m, ..
            },
        ) => (hash.is_empty() || hash == now) && mode == m,
        _ => expected == found,
    }
}

fn text_diff(path: &str, now: Option<&[u8]>, restored: Option<&[u8]>) -> String {
    let (Ok(now), Ok(restored)) = (
        std::str::from_utf8(now.unwrap_or_default()),
        std::str::from_utf8(restored.unwrap_or_default()),
    ) else {
        return String::new();
    };
    similar::TextDiff::from_lines(now, restored)
        .unified_diff()
        .header(&format!("{path} (now)"), &format!("{path} (restored)"))
        .to_string()
}

/// Puts every path of `entries` back to its `before` state under `root` (absolute,
/// canonical). `blobs` gives a before-content by hash. Refuses, touching nothing, a
/// path that is not plain or that passes through a symlink, a content that is
/// missing, and — unless `force` — paths changed since the checkpoint
/// ([`CheckpointError::Conflicts`]). A path that fails once writing began does not
/// stop the others: the restore then fails with [`CheckpointError::Partial`], naming
/// the paths put back and those not, with why. A path already in its state before is
/// no conflict, so the same restore can be run again once the cause is fixed.
/// Blocking.
pub fn restore(
    root: &Path,
    entries: &[CheckpointEntry],
    blobs: &BTreeMap<String, Arc<Vec<u8>>>,
    force: bool,
) -> Result<Restored, CheckpointError> {
    let dir = WorkspaceDir::open(root).map_err(|err| io_error(".", err))?;
    let mut entries = checked(entries)?;
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    // Look first: every path's place and state now, and every content at hand.
    let mut conflicts = Vec::new();
    let mut inverse = Captured::default();
    for (entry, names) in &entries {
        let found_place = place(&dir, &entry.path, names)?;
        let (found, content) =
            current(found_place.as_ref()).map_err(|err| io_error(&entry.path, err))?;
        if let Some(hash) = entry.before.hash()
            && !blobs.contains_key(hash)
        {
            return Err(CheckpointError::MissingContent {
                path: entry.path.clone(),
            });
        }
        // A path already back in its state before (a retry after a partial restore,
        // or someone put it back) is no conflict: writing it changes nothing.
        if !unchanged(&entry.after, &found) && !unchanged(&entry.before, &found) {
            let restored = entry.before.hash().and_then(|hash| blobs.get(hash));
            conflicts.push(Conflict {
                path: entry.path.clone(),
                diff: text_diff(
                    &entry.path,
                    content.as_deref(),
                    restored.map(|b| b.as_slice()),
                ),
                expected: entry.after.clone(),
                found: found.clone(),
            });
        }
        if let (Some(hash), Some(bytes)) = (found.hash(), content) {
            inverse.blobs.insert(hash.to_owned(), Arc::new(bytes));
        }
        inverse.entries.push(CheckpointEntry {
            path: entry.path.clone(),
            before: found,
            after: entry.before.clone(),
        });
    }
    if !conflicts.is_empty() && !force {
        return Err(CheckpointError::Conflicts(conflicts));
    }
    // From here a failing path does not stop the others: each is tried, and a path
    // that failed is named (a half-done restore is never silent).
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    // Children first: what must go (or be replaced by another kind) is removed.
    for (entry, names) in entries.iter().rev() {
        if let Err(error) = clear(&dir, entry, names) {
            failed.entry(entry.path.clone()).or_insert(error);
        }
    }
    // Parents first: what was there is put back.
    for (entry, names) in &entries {
        if entry.before == EntryState::Absent || entry.before == EntryState::Other {
            continue;
        }
        if failed.contains_key(&entry.path) {
            continue;
        }
        let written = match place(&dir, &entry.path, names) {
            Ok(Some(place)) => put(&place, &entry.before, blobs).map_err(|err| err.to_string()),
            Ok(None) => Err("its parent directory is missing".to_owned()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(error) = written {
            failed.insert(entry.path.clone(), error);
        }
    }
    inverse.entries.retain(|entry| entry.before != entry.after);
    if !failed.is_empty() {
        let restored = entries
            .iter()
            .map(|(entry, _)| entry.path.clone())
            .filter(|path| !failed.contains_key(path))
            .collect();
        // The inverse of what was put back only: a path not put back is unchanged.
        inverse
            .entries
            .retain(|entry| !failed.contains_key(&entry.path));
        let kept: std::collections::BTreeSet<&str> = inverse
            .entries
            .iter()
            .filter_map(|e| e.before.hash())
            .collect();
        inverse.blobs.retain(|hash, _| kept.contains(hash.as_str()));
        return Err(CheckpointError::Partial {
            restored,
            failed: failed
                .into_iter()
                .map(|(path, error)| NotRestored { path, error })
                .collect(),
            inverse: Box::new(inverse),
        });
    }
    Ok(Restored { inverse })
}

/// Removes what is at `entry`'s path when its state before is not of the same kind
/// (a directory of the same kind stays); the failure as text.
fn clear(dir: &WorkspaceDir, entry: &CheckpointEntry, names: &[&OsStr]) -> Result<(), String> {
    let Some(place) = place(dir, &entry.path, names).map_err(|err| err.to_string())? else {
        return Ok(());
    };
    let (found, _) = current(Some(&place)).map_err(|err| err.to_string())?;
    let same_kind = std::mem::discriminant(&found) == std::mem::discriminant(&entry.before);
    let keep = matches!(found, EntryState::Dir { .. }) && same_kind;
    if found != EntryState::Absent && !keep {
        remove(&place, &found).map_err(|err| err.to_string())?;
    }
    Ok(())
}

fn remove(place: &Place<'_>, found: &EntryState) -> io::Result<()> {
    let flags = match found {
        EntryState::Dir { .. } => AtFlags::REMOVEDIR,
        _ => AtFlags::empty(),
    };
    match rustix::fs::unlinkat(&place.dir, place.name, flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// A name beside `place` for writing before the rename.
fn temp_name(place: &Place<'_>) -> std::ffi::OsString {
    let mut name = std::ffi::OsString::from(".oxydra-restore-");
    name.push(std::process::id().to_string());
    name.push("-");
    name.push(place.name);
    name
}

fn put(
    place: &Place<'_>,
    state: &EntryState,
    blobs: &BTreeMap<String, Arc<Vec<u8>>>,
) -> io::Result<()> {
    match state {
        EntryState::Absent | EntryState::Other => Ok(()),
        EntryState::Dir { mode } => {
            match rustix::fs::mkdirat(&place.dir, place.name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(err) => return Err(err.into()),
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(&place.dir, place.name, flags, Mode::empty())?;
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(*mode))?;
            Ok(())
        }
        EntryState::Symlink { target } => {
            let temp = temp_name(place);
            let _ = rustix::fs::unlinkat(&place.dir, &temp, AtFlags::empty());
            rustix::fs::symlinkat(target.as_str(), &place.dir, &temp)?;
            rustix::fs::renameat(&place.dir, &temp, &place.dir, place.name)?;
            Ok(())
        }
        EntryState::File { hash, mode, .. } => {
            let bytes = blobs.get(hash).ok_or(io::ErrorKind::NotFound)?;
            let temp = temp_name(place);
            let _ = rustix::fs::unlinkat(&place.dir, &temp, AtFlags::empty());
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(&place.dir, &temp, flags, Mode::from_raw_mode(0o600))?;
            let mut file = std::fs::File::from(fd);
            file.write_all(bytes)?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(*mode))?;
            file.sync_all()?;
            drop(file);
            rustix::fs::renameat(&place.dir, &temp, &place.dir, place.name)?;
            Ok(())
        }
    }
}
