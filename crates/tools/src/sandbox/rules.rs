//! The Landlock rules of a confined command, built in the parent.
//!
//! Rights handled: every file system right of ABI 7 (`from_all`: execute, read,
//! write, create, remove, rename across directories, truncate, device ioctl), the TCP
//! bind/connect rights of ABI 4 when the network is off, and the signal and abstract
//! UNIX socket scopes of ABI 6. The crate applies them best-effort: a kernel below an
//! ABI silently drops that ABI's additions, and [`super::sandbox_support`] refuses
//! kernels below ABI 3.
//!
//! Granted: read and execute everywhere; read, write and `ioctl` on the harmless
//! devices (`/dev/null` …); everything in the private temporary directory and (in
//! `workspace-write`) in the workspace.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, Scope,
};
use rustix::fs::{FileType, Mode, OFlags};

use crate::error::ToolError;

/// The ABI whose rights the rules name (the crate downgrades them on older kernels).
const ABI_USED: ABI = ABI::V7;

/// Devices every command may read and write.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The directories a command may write.
pub(super) struct RulePaths<'a> {
    /// The workspace, when it is writable.
    pub workspace: Option<&'a Path>,
    /// The private temporary directory.
    pub temp: &'a Path,
    /// Canonical paths inside the workspace that must stay read-only.
    pub read_only: &'a [PathBuf],
}

/// How the workspace is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// As one tree: its read-only paths are kept by read-only bind mounts.
    Whole,
    /// Piece by piece around its read-only paths, for when no mount namespace is
    /// available: each directory on the way to a read-only path is left read-only
    /// itself, and each of its other entries is granted whole. Creating or removing
    /// entries directly in such a directory (e.g. a new file at the workspace root,
    /// which holds `.git`) is refused too.
    AroundReadOnly,
}

/// The ruleset for `paths`, ready to be applied in the child.
pub(super) fn ruleset(
    paths: &RulePaths<'_>,
    network: bool,
    layout: Layout,
) -> Result<RulesetCreated, ToolError> {
    let all = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(landlock_error)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(landlock_error)?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(ABI::V6))
        .and_then(Ruleset::create)
        .map_err(landlock_error)?;
    let mut grant = |fd: OwnedFd, access: BitFlags<AccessFs>| -> Result<(), ToolError> {
        RulesetCreatedAttr::add_rule(&mut created, PathBeneath::new(fd, access))
            .map(|_| ())
            .map_err(landlock_error)
    };
    grant(open(Path::new("/"))?, AccessFs::from_read(ABI_USED))?;
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEVICES {
        // A device this system lacks is simply not granted.
        if let Ok(fd) = open(Path::new(path)) {
            grant(fd, device)?;
        }
    }
    grant(open(paths.temp)?, all)?;
    match (paths.workspace, layout) {
        (Some(workspace), Layout::Whole) => grant(open(workspace)?, all)?,
        (Some(workspace), Layout::AroundReadOnly) => {
            grant_around(workspace, paths.read_only, &mut grant)?;
        }
        (None, _) => {}
    }
    Ok(created)
}

/// Grants every entry of `dir` but the read-only ones, descending into the
/// directories that lead to one.
fn grant_around(
    dir: &Path,
    read_only: &[PathBuf],
    grant: &mut impl FnMut(OwnedFd, BitFlags<AccessFs>) -> Result<(), ToolError>,
) -> Result<(), ToolError> {
    let entries = fs::read_dir(dir).map_err(|source| io_error("listing the workspace", source))?;
    for entry in entries {
        let path = entry
            .map_err(|source| io_error("listing the workspace", source))?
            .path();
        if read_only.contains(&path) {
            continue;
        }
        let Ok(fd) = open(&path) else {
            // Gone since it was listed: nothing to grant.
            continue;
        };
        let kind = rustix::fs::fstat(&fd)
            .map(|stat| FileType::from_raw_mode(stat.st_mode))
            .map_err(|errno| io_error("inspecting the workspace", errno.into()))?;
        match kind {
            // A link is never granted: writes through it land on its target, whose
            // own rules decide.
            FileType::Symlink => {}
            FileType::Directory if read_only.iter().any(|p| p.starts_with(&path)) => {
                grant_around(&path, read_only, grant)?;
            }
            FileType::Directory => grant(fd, AccessFs::from_all(ABI_USED))?,
            _ => grant(fd, AccessFs::from_file(ABI_USED))?,
        }
    }
    Ok(())
}

/// An `O_PATH` descriptor of `path` itself (a final symlink is not followed).
fn open(path: &Path) -> Result<OwnedFd, ToolError> {
    rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(|errno| ToolError::Sandbox {
        action: "opening a path for the Landlock rules",
        reason: format!("`{}`: {}", path.display(), std::io::Error::from(errno)),
    })
}

fn landlock_error(err: RulesetError) -> ToolError {
    ToolError::Sandbox {
        action: "building the Landlock rules",
        reason: err.to_string(),
    }
}

fn io_error(action: &'static str, source: std::io::Error) -> ToolError {
    ToolError::Sandbox {
        action,
        reason: source.to_string(),
    }
}
