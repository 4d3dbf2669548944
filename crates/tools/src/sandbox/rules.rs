//! The Landlock rules of a confined command, built in the parent.
//!
//! Rights handled: every file system right of ABI 7 (`from_all`: execute, read,
//! write, create, remove, rename across directories, truncate, device ioctl), the TCP
//! bind/connect rights of ABI 4 when the network is off, and the signal and abstract
//! UNIX socket scopes of ABI 6. The crate applies them best-effort: a kernel below an
//! ABI silently drops that ABI's additions, and [`super::sandbox_support`] refuses
//! kernels below ABI 3.
//!
//! Granted: listing and executing everywhere; reading every top-level directory but
//! `/dev`, where only the harmless devices (`/dev/null`, `/dev/zero`, `/dev/full`,
//! `/dev/random`, `/dev/urandom`) may be read and written (no disk, no terminal);
//! everything but creating device nodes in the private temporary directory; and, in
//! `workspace-write`, the same in the workspace. The workspace's rule cannot be built
//! here: the child mounts an overlay on the workspace, whose files are other inodes
//! than the ones the parent could open, so the child adds that rule itself
//! ([`WorkspaceRule`]) after mounting.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, Scope,
};
use rustix::fs::{Mode, OFlags};

use crate::error::ToolError;

/// The ABI whose rights the rules name (the crate downgrades them on older kernels).
const ABI_USED: ABI = ABI::V7;

/// Devices every command may read and write. `/dev/tty` is not one: a command has no
/// terminal.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The rights of a writable directory: everything but creating device nodes.
fn writable() -> BitFlags<AccessFs> {
    AccessFs::from_all(ABI_USED) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// The rights the child grants on the workspace once its overlay is mounted, as the
/// raw bits `landlock_add_rule` takes: [`writable`] cut to what this kernel handles
/// (the rule may name no right the ruleset does not handle).
pub(super) fn workspace_access() -> u64 {
    (writable() & supported()).bits()
}

/// The rights the child grants on the `/proc` of its own PID namespace, which it
/// mounts (a new file system the parent's rules cannot name): reading.
pub(super) fn proc_access() -> u64 {
    (AccessFs::from_read(ABI_USED) & supported()).bits()
}

/// The file system rights this kernel handles.
fn supported() -> BitFlags<AccessFs> {
    AccessFs::from_all(ABI::from(super::child::landlock_abi()))
}

/// The ruleset for a command whose private temporary directory is `temp`: every rule
/// but the workspace's (see the module docs), ready for the child to complete.
pub(super) fn ruleset(temp: &Path, network: bool) -> Result<OwnedFd, ToolError> {
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_USED))
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
    grant(open(Path::new("/"))?, AccessFs::ReadDir | AccessFs::Execute)?;
    for entry in top_level()? {
        // A top-level entry that cannot be opened (gone, no permission) is not granted.
        if let Ok(fd) = open_following(&entry) {
            grant(fd, AccessFs::from_read(ABI_USED))?;
        }
    }
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEVICES {
        // A device this system lacks is simply not granted.
        if let Ok(fd) = open(Path::new(path)) {
            grant(fd, device)?;
        }
    }
    grant(open(temp)?, writable())?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| ToolError::Sandbox {
        action: "building the Landlock rules",
        reason: "this kernel does not enforce Landlock".to_owned(),
    })
}

/// The entries of `/` that may be read: all but `/dev`.
fn top_level() -> Result<Vec<std::path::PathBuf>, ToolError> {
    let entries = std::fs::read_dir("/").map_err(|source| ToolError::Sandbox {
        action: "listing the root directory for the Landlock rules",
        reason: source.to_string(),
    })?;
    Ok(entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != "dev")
        .map(|entry| entry.path())
        .collect())
}

/// An `O_PATH` descriptor of `path` itself (a final symlink is not followed).
fn open(path: &Path) -> Result<OwnedFd, ToolError> {
    open_with(path, OFlags::NOFOLLOW)
}

/// An `O_PATH` descriptor of what `path` leads to (`/bin` → `/usr/bin`).
fn open_following(path: &Path) -> Result<OwnedFd, ToolError> {
    open_with(path, OFlags::empty())
}

fn open_with(path: &Path, extra: OFlags) -> Result<OwnedFd, ToolError> {
    rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC | extra, Mode::empty()).map_err(|errno| {
        ToolError::Sandbox {
            action: "opening a path for the Landlock rules",
            reason: format!("`{}`: {}", path.display(), std::io::Error::from(errno)),
        }
    })
}

fn landlock_error(err: RulesetError) -> ToolError {
    ToolError::Sandbox {
        action: "building the Landlock rules",
        reason: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_writable_directory_may_hold_new_devices() {
        assert!(!writable().contains(AccessFs::MakeChar));
        assert!(!writable().contains(AccessFs::MakeBlock));
        assert!(writable().contains(AccessFs::WriteFile));
        let bits = workspace_access();
        assert_eq!(bits & BitFlags::from(AccessFs::MakeBlock).bits(), 0);
        assert_eq!(bits & BitFlags::from(AccessFs::MakeChar).bits(), 0);
    }

    #[test]
    fn dev_is_not_read_whole() {
        let entries = top_level().unwrap();
        assert!(!entries.iter().any(|path| path == Path::new("/dev")));
        assert!(entries.iter().any(|path| path == Path::new("/usr")));
    }
}
