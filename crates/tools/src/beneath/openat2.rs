//! The Linux way beneath the root: one `openat2` that the kernel keeps beneath the
//! root handle and off every symlink, atomically.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::escape;

/// Set once the kernel (or a seccomp filter) has said it has no `openat2`.
static MISSING: AtomicBool = AtomicBool::new(false);

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Open `names` below `root` with `flags`; `None` when `openat2` cannot answer
/// (missing, or asking for a retry) and the walk must.
pub(super) fn open(
    root: BorrowedFd<'_>,
    names: &[&OsStr],
    flags: OFlags,
) -> Option<io::Result<OwnedFd>> {
    if MISSING.load(Ordering::Relaxed) {
        return None;
    }
    let path: PathBuf = if names.is_empty() {
        PathBuf::from(".")
    } else {
        names.iter().collect()
    };
    match rustix::fs::openat2(root, &path, flags, Mode::empty(), RESOLVE) {
        Ok(fd) => Some(Ok(fd)),
        Err(Errno::NOSYS) => {
            MISSING.store(true, Ordering::Relaxed);
            None
        }
        // A filter that refuses the call outright, or a resolution race the kernel
        // asks us to retry: the walk answers the same question.
        Err(Errno::PERM | Errno::AGAIN) => None,
        // `ELOOP`: a symlink, where the checked path had none; `EXDEV`: a way out.
        Err(Errno::LOOP | Errno::XDEV) => Some(Err(escape())),
        Err(err) => Some(Err(err.into())),
    }
}
