//! The hook that confines a command's process between fork and exec.
//!
//! It runs in the forked child, which has one thread and a copy of the parent's
//! memory, so it only makes system calls on data the parent prepared: no allocation,
//! no locks. In order: (1) when read-only paths are given, enter a new user and mount
//! namespace and bind-mount each of them read-only onto itself (mounts are private to
//! the namespace and vanish with the command); (2) with the network off, install the
//! seccomp filter; (3) restrict itself with the Landlock ruleset: the one that grants
//! the workspace whole when the mounts hold, else the one that grants it around the
//! read-only paths. Any failure aborts the spawn with that error: the command never
//! runs unconfined.
//!
//! `CLONE_NEWUSER` is refused to a multithreaded process, which is why this happens
//! in the child; `landlock_restrict_self` confines the calling thread and what it
//! starts, which after fork is the whole command.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use landlock::{RulesetCreated, RulesetStatus};
use rustix::fs::{Mode, OFlags, StatVfsMountFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;
use seccompiler::BpfProgram;

use super::c_path;
use crate::error::ToolError;

/// One read-only bind mount: the path, and the flags of the mount it is on (a
/// remount inside a user namespace must keep `nosuid`, `nodev`, `noexec` …).
pub(super) struct ReadOnlyMount {
    path: CString,
    keep: MountFlags,
}

/// Everything the child needs, prepared by the parent.
pub(super) struct Plan {
    /// The ruleset to apply when the read-only paths are mounted (or there are none).
    pub primary: RulesetCreated,
    /// The ruleset to apply when they could not be mounted.
    pub fallback: Option<RulesetCreated>,
    /// The read-only bind mounts.
    pub mounts: Vec<ReadOnlyMount>,
    /// The network filter, when the network is off.
    pub filter: Option<BpfProgram>,
}

/// The bind mounts that keep `paths` read-only.
pub(super) fn read_only_mounts(paths: &[PathBuf]) -> Result<Vec<ReadOnlyMount>, ToolError> {
    paths
        .iter()
        .map(|path| {
            let stat = rustix::fs::statvfs(path).map_err(|errno| ToolError::Sandbox {
                action: "inspecting a read-only path",
                reason: format!("`{}`: {}", path.display(), io::Error::from(errno)),
            })?;
            let mut keep = MountFlags::empty();
            for (has, flag) in [
                (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
                (StatVfsMountFlags::NODEV, MountFlags::NODEV),
                (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
                (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
                (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
                (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
            ] {
                if stat.f_flag.contains(has) {
                    keep |= flag;
                }
            }
            Ok(ReadOnlyMount {
                path: c_path(path)?,
                keep,
            })
        })
        .collect()
}

/// The id maps that keep the command's own uid and gid inside the user namespace.
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

/// Installs the hook on `command`.
pub(super) fn install(command: &mut std::process::Command, plan: Plan) {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let maps = IdMaps {
        uid: format!("{uid} {uid} 1\n").into_bytes(),
        gid: format!("{gid} {gid} 1\n").into_bytes(),
    };
    let mut plan = Some(plan);
    let hook = move || confine(plan.take(), &maps);
    // SAFETY: `pre_exec` runs the hook in the child between fork and exec, where only
    // async-signal-safe work is sound. `confine` makes system calls only (unshare,
    // open/write on /proc, mount, prctl, seccomp, landlock_restrict_self) on buffers
    // the parent built; it takes the plan out of its `Option` (a move, no
    // allocation) and reports failure with raw OS errors, which do not allocate.
    unsafe {
        command.pre_exec(hook);
    }
}

/// Confines the calling (child) process. Runs after fork: system calls only.
fn confine(plan: Option<Plan>, maps: &IdMaps) -> io::Result<()> {
    let Some(plan) = plan else {
        // The hook runs once per spawn; a second spawn of the same command is refused.
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let ruleset = match plan.fallback {
        Some(fallback) if enter_namespace(&plan.mounts, maps).is_err() => fallback,
        _ => plan.primary,
    };
    if let Some(filter) = &plan.filter {
        seccompiler::apply_filter(filter).map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
    }
    let status = ruleset
        .restrict_self()
        .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(io::Error::from_raw_os_error(libc::ENOSYS));
    }
    Ok(())
}

/// Enters a new user and mount namespace and mounts each path read-only.
fn enter_namespace(mounts: &[ReadOnlyMount], maps: &IdMaps) -> io::Result<()> {
    // SAFETY: without `CLONE_FILES` no file descriptor table is unshared, and this
    // process has a single thread.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }?;
    // `setgroups` must be denied before an unprivileged process may map its gid.
    match write_proc(c"/proc/self/setgroups", b"deny") {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    write_proc(c"/proc/self/uid_map", &maps.uid)?;
    write_proc(c"/proc/self/gid_map", &maps.gid)?;
    rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )?;
    for mount in mounts {
        rustix::mount::mount_bind_recursive(mount.path.as_c_str(), mount.path.as_c_str())?;
        rustix::mount::mount_remount(
            mount.path.as_c_str(),
            MountFlags::BIND | MountFlags::RDONLY | mount.keep,
            c"",
        )?;
    }
    Ok(())
}

fn write_proc(path: &CStr, contents: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let written = rustix::io::write(&fd, contents)?;
    if written == contents.len() {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EIO))
    }
}
