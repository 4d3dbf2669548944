//! Applying what a command changed (the overlay's upper layer, see [`super::overlay`])
//! to the workspace, one entry at a time, under the protected-paths policy.
//!
//! The upper layer is walked in pre-order, whole (no cap: it holds only what the
//! command wrote, and all of it must be either applied or named as refused). Each
//! entry is one change, asked of [`ProtectedPaths::check_write`] against the
//! workspace as it is at that moment, so a change that would complete something
//! protected (the last of `HEAD`, `objects/`, `refs/` that makes a bare repository)
//! is refused even when each earlier one was not:
//!
//! - a *whiteout* (a character device 0:0) removes the entry; a directory is removed
//!   only when nothing beneath it is protected;
//! - a directory is created, or its mode changed; an *opaque* one (`user.overlay.opaque`)
//!   replaced the directory beneath, whose other entries are removed;
//! - a file or symlink replaces the workspace's entry, written beside it and renamed
//!   over it (so a reader sees the old or the new, never half); an entry that is
//!   byte-for-byte the same (the command only opened it for writing) is no change;
//! - FIFOs, sockets and devices are never applied, and no applied entry keeps a
//!   set-user-ID or set-group-ID bit or a file capability: a command run as root could
//!   otherwise leave a set-user-ID root program in the workspace.
//!
//! A refused directory is refused with everything beneath it. Nothing is followed
//! through a symlink: entries are inspected with `lstat`, and a directory replaced
//! by a link is a replacement, not a way out.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::protected::ProtectedPaths;

/// What applying a command's changes did to the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceChanges {
    /// The paths (relative to the workspace) created, changed or removed.
    pub applied: Vec<String>,
    /// The changes left out, each with why.
    pub refused: Vec<RefusedChange>,
}

/// A change a command made that was not applied to the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedChange {
    /// The path, relative to the workspace.
    pub path: String,
    /// Why, in words the model and a person can act on.
    pub reason: String,
}

impl WorkspaceChanges {
    /// What the model should be told about the changes left out, if any.
    pub fn describe_refused(&self) -> Option<String> {
        if self.refused.is_empty() {
            return None;
        }
        let mut text = String::from(
            "the sandbox did not apply these changes to the workspace (the rest was applied):",
        );
        for refused in &self.refused {
            text.push_str("\n- ");
            text.push_str(&refused.path);
            text.push_str(": ");
            text.push_str(&refused.reason);
        }
        Some(text)
    }
}

/// What decides whether a change may be applied.
pub(super) struct Policy<'a> {
    /// The protected-paths policy.
    pub protected: &'a ProtectedPaths,
    /// Canonical paths the embedding program keeps read-only to commands.
    pub read_only: &'a [PathBuf],
}

/// Applies the changes in `upper` to `workspace` (absolute, canonical). Blocking.
pub(super) fn apply(upper: &Path, workspace: &Path, policy: &Policy<'_>) -> WorkspaceChanges {
    let mut applier = Applier {
        upper,
        workspace,
        policy,
        report: WorkspaceChanges::default(),
    };
    applier.directory_entries(Path::new(""));
    applier.report
}

struct Applier<'a> {
    upper: &'a Path,
    workspace: &'a Path,
    policy: &'a Policy<'a>,
    report: WorkspaceChanges,
}

/// What an entry of the upper layer is.
enum Entry {
    Whiteout,
    Directory(Metadata),
    File(Metadata),
    Symlink(PathBuf),
    Special,
}

impl Applier<'_> {
    /// Applies every entry of the upper layer's directory `rel`.
    fn directory_entries(&mut self, rel: &Path) {
        let names = match sorted_names(&self.upper.join(rel)) {
            Ok(names) => names,
            Err(err) => {
                self.refuse(rel, format!("could not be read from the sandbox: {err}"));
                return;
            }
        };
        for name in names {
            let child = rel.join(&name);
            match self.entry(&child) {
                Ok(Entry::Whiteout) => self.remove(&child),
                Ok(Entry::Directory(meta)) => self.directory(&child, &meta),
                Ok(Entry::File(meta)) => self.file(&child, &meta),
                Ok(Entry::Symlink(target)) => self.symlink(&child, &target),
                Ok(Entry::Special) => self.refuse(
                    &child,
                    "a FIFO, socket or device node is never applied to the workspace".to_owned(),
                ),
                Err(err) => {
                    self.refuse(&child, format!("could not be read from the sandbox: {err}"));
                }
            }
        }
    }

    fn entry(&self, rel: &Path) -> io::Result<Entry> {
        let path = self.upper.join(rel);
        let meta = fs::symlink_metadata(&path)?;
        let kind = meta.file_type();
        Ok(if kind.is_char_device() && meta.rdev() == 0 {
            Entry::Whiteout
        } else if kind.is_dir() {
            Entry::Directory(meta)
        } else if kind.is_file() {
            Entry::File(meta)
        } else if kind.is_symlink() {
            Entry::Symlink(fs::read_link(&path)?)
        } else {
            Entry::Special
        })
    }

    fn directory(&mut self, rel: &Path, meta: &Metadata) {
        let target = self.workspace.join(rel);
        let mode = safe_mode(meta);
        match fs::symlink_metadata(&target) {
            Ok(existing) if existing.is_dir() => {
                if is_opaque(&self.upper.join(rel)) {
                    self.remove_missing(rel);
                }
                if existing.permissions().mode() & 0o1777 != mode {
                    if !self.allowed(rel) {
                        return self.refuse_beneath(rel);
                    }
                    let set = fs::set_permissions(&target, fs::Permissions::from_mode(mode));
                    self.record(rel, set);
                }
            }
            existing => {
                if !self.allowed(rel) {
                    return self.refuse_beneath(rel);
                }
                if let Ok(existing) = existing
                    && !self.clear(rel, &existing)
                {
                    return self.refuse_beneath(rel);
                }
                let made = fs::create_dir(&target)
                    .and_then(|()| fs::set_permissions(&target, fs::Permissions::from_mode(mode)));
                let made_ok = made.is_ok();
                self.record(rel, made);
                if !made_ok {
                    return;
                }
            }
        }
        self.directory_entries(rel);
    }

    fn file(&mut self, rel: &Path, meta: &Metadata) {
        let source = self.upper.join(rel);
        let target = self.workspace.join(rel);
        let existing = fs::symlink_metadata(&target).ok();
        let mode = safe_mode(meta);
        if let Some(existing) = &existing
            && existing.is_file()
            && existing.permissions().mode() & 0o1777 == mode
            && same_contents(&source, &target).unwrap_or(false)
        {
            return;
        }
        if !self.may_replace(rel, existing.as_ref()) {
            return;
        }
        let placed = place(&target, |temp| {
            if fs::rename(&source, temp).is_err() {
                fs::copy(&source, temp)?;
            }
            // A renamed file keeps its extended attributes: no file capability.
            let _ = rustix::fs::lremovexattr(temp, "security.capability");
            fs::set_permissions(temp, fs::Permissions::from_mode(mode))?;
            let times = fs::FileTimes::new().set_modified(meta.modified()?);
            fs::File::options().write(true).open(temp)?.set_times(times)
        });
        self.record(rel, placed);
    }

    fn symlink(&mut self, rel: &Path, link: &Path) {
        let target = self.workspace.join(rel);
        let existing = fs::symlink_metadata(&target).ok();
        if existing.as_ref().is_some_and(Metadata::is_symlink)
            && fs::read_link(&target).is_ok_and(|current| current == link)
        {
            return;
        }
        if !self.may_replace(rel, existing.as_ref()) {
            return;
        }
        let placed = place(&target, |temp| std::os::unix::fs::symlink(link, temp));
        self.record(rel, placed);
    }

    /// Whether a file or symlink may be put at the workspace's `rel`, where `existing`
    /// is: the policy allows the change, and a directory there (which a rename over it
    /// would not replace) has been removed.
    fn may_replace(&mut self, rel: &Path, existing: Option<&Metadata>) -> bool {
        if !self.allowed(rel) {
            return false;
        }
        match existing {
            Some(existing) if existing.is_dir() => self.clear(rel, existing),
            _ => true,
        }
    }

    /// Removes the workspace's `rel` (a whiteout).
    fn remove(&mut self, rel: &Path) {
        let Ok(existing) = fs::symlink_metadata(self.workspace.join(rel)) else {
            return;
        };
        if !self.allowed(rel) {
            return;
        }
        if self.clear(rel, &existing) {
            self.report.applied.push(shown(rel));
        }
    }

    /// Removes the entries of the workspace's directory `rel` that the opaque upper
    /// directory does not have.
    fn remove_missing(&mut self, rel: &Path) {
        let Ok(kept) = sorted_names(&self.upper.join(rel)) else {
            return;
        };
        let kept: BTreeSet<OsString> = kept.into_iter().collect();
        let Ok(present) = sorted_names(&self.workspace.join(rel)) else {
            return;
        };
        for name in present.into_iter().filter(|name| !kept.contains(name)) {
            self.remove(&rel.join(name));
        }
    }

    /// Removes whatever is at the workspace's `rel` (already allowed itself): a
    /// directory only when nothing beneath it is protected. Whether it is gone.
    fn clear(&mut self, rel: &Path, existing: &Metadata) -> bool {
        let target = self.workspace.join(rel);
        if !existing.is_dir() {
            let removed = fs::remove_file(&target);
            let ok = removed.is_ok();
            if let Err(err) = removed {
                self.refuse(rel, format!("could not be removed: {err}"));
            }
            return ok;
        }
        if let Some((inner, reason)) = self.protected_beneath(rel) {
            self.refuse(
                rel,
                format!(
                    "removing it would remove `{}`, which {reason}",
                    shown(&inner)
                ),
            );
            return false;
        }
        match fs::remove_dir_all(&target) {
            Ok(()) => true,
            Err(err) => {
                self.refuse(rel, format!("could not be removed: {err}"));
                false
            }
        }
    }

    /// The first protected path beneath the workspace's directory `rel`, if any, with
    /// why it is protected. The whole tree is walked (it is about to be removed).
    fn protected_beneath(&self, rel: &Path) -> Option<(PathBuf, String)> {
        let mut pending = vec![rel.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let Ok(names) = sorted_names(&self.workspace.join(&dir)) else {
                continue;
            };
            for name in names {
                let child = dir.join(name);
                if let Err(reason) = self.check(&child) {
                    return Some((child, reason));
                }
                if fs::symlink_metadata(self.workspace.join(&child)).is_ok_and(|m| m.is_dir()) {
                    pending.push(child);
                }
            }
        }
        None
    }

    /// Whether the policy allows changing `rel`; a refusal is recorded.
    fn allowed(&mut self, rel: &Path) -> bool {
        match self.check(rel) {
            Ok(()) => true,
            Err(reason) => {
                self.refuse(rel, reason);
                false
            }
        }
    }

    fn check(&self, rel: &Path) -> Result<(), String> {
        let absolute = self.workspace.join(rel);
        if self
            .policy
            .read_only
            .iter()
            .any(|path| absolute.starts_with(path))
        {
            return Err("is read-only to commands".to_owned());
        }
        self.policy
            .protected
            .check_write(self.workspace, &shown(rel), &absolute)
            .map_err(|err| err.to_string())
    }

    /// Refuses `rel`, and says how much beneath it goes with it.
    fn refuse_beneath(&mut self, rel: &Path) {
        let beneath = count_entries(&self.upper.join(rel));
        if beneath > 0
            && let Some(last) = self.report.refused.last_mut()
        {
            last.reason.push_str(&format!(
                " (with the {beneath} entries the command made beneath it)"
            ));
        }
    }

    fn record(&mut self, rel: &Path, done: io::Result<()>) {
        match done {
            Ok(()) => self.report.applied.push(shown(rel)),
            Err(err) => self.refuse(rel, format!("could not be applied: {err}")),
        }
    }

    fn refuse(&mut self, rel: &Path, reason: String) {
        self.report.refused.push(RefusedChange {
            path: shown(rel),
            reason,
        });
    }
}

/// The permission bits an entry is applied with: its own, without set-user-ID and
/// set-group-ID.
fn safe_mode(meta: &Metadata) -> u32 {
    meta.permissions().mode() & 0o1777
}

/// Puts a new entry at `target` atomically: `make` creates it under a temporary name
/// in the same directory, which is then renamed over `target`.
fn place(target: &Path, make: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let parent = target
        .parent()
        .ok_or_else(|| io::Error::other("the workspace root cannot be replaced"))?;
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = parent.join(format!(".oxydra-apply-{}-{name}", std::process::id()));
    let _ = fs::remove_file(&temp);
    let made = make(&temp).and_then(|()| fs::rename(&temp, target));
    if made.is_err() {
        let _ = fs::remove_file(&temp);
    }
    made
}

/// The names in directory `dir`, sorted (so the order of application is stable).
fn sorted_names(dir: &Path) -> io::Result<Vec<OsString>> {
    let mut names = fs::read_dir(dir)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// Whether overlayfs marked the upper directory `path` opaque: it hides the lower
/// directory's entries rather than merging with them.
fn is_opaque(path: &Path) -> bool {
    let mut value = [0u8; 4];
    matches!(
        rustix::fs::lgetxattr(path, "user.overlay.opaque", &mut value[..]),
        Ok(len) if value.get(..len) == Some(b"y".as_slice())
    )
}

/// How many entries lie beneath the directory `dir`.
fn count_entries(dir: &Path) -> usize {
    let mut count = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            count += 1;
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    count
}

/// Whether the files `a` and `b` hold the same bytes.
fn same_contents(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut a, mut b) = (fs::File::open(a)?, fs::File::open(b)?);
    if a.metadata()?.len() != b.metadata()?.len() {
        return Ok(false);
    }
    let (mut left, mut right) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let read = a.read(&mut left)?;
        if read == 0 {
            return Ok(true);
        }
        let (Some(want), Some(got)) = (left.get(..read), right.get_mut(..read)) else {
            return Ok(false);
        };
        b.read_exact(got)?;
        if want != got {
            return Ok(false);
        }
    }
}

/// `rel` as shown in messages.
fn shown(rel: &Path) -> String {
    rel.display().to_string()
}
