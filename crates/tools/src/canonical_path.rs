//! The canonical path of a file, as `realpath(3)` gives it, from one open.
//!
//! [`std::fs::canonicalize`] is the C library's `realpath`, which walks a path one name
//! at a time with a `readlink` for each (a file two names under a root three deep:
//! five calls, each looking its whole prefix up again). The kernel resolves the same
//! path — every symlink followed, `..` taken after the link before it — in one
//! `open(O_PATH)`, and names the file it reached in `/proc/self/fd`. Where that name
//! cannot be trusted (`/proc` is not procfs, or the file was removed meanwhile and the
//! kernel appends ` (deleted)`), or on systems without it, `std::fs::canonicalize`
//! answers instead. The workspace boundary ([`crate::WorkspacePolicy`]) is checked on
//! the path returned here, so it must be the one `realpath` would give.

use std::io;
use std::path::{Path, PathBuf};

/// The canonical form of `path`: absolute, every symlink resolved, no `.` or `..`.
/// Fails as `realpath` does where a name is missing, not a directory, or not
/// searchable.
pub(crate) fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
        if let Some(found) = linux::path_of(std::os::fd::AsFd::as_fd(&fd)) {
            return Ok(found);
        }
    }
    path.canonicalize()
}

/// The canonical form of the directory `path`, and a handle on it (`O_PATH`, where
/// there is one): the path is the handle's own, so the two cannot differ even if a
/// link on the way is swapped meanwhile. A file that is not a directory fails with
/// `ENOTDIR`.
pub(crate) fn open_dir(
    path: &Path,
    flags: rustix::fs::OFlags,
) -> io::Result<(PathBuf, std::os::fd::OwnedFd)> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, flags | OFlags::DIRECTORY, Mode::empty())?;
    #[cfg(target_os = "linux")]
    if let Some(found) = linux::path_of(std::os::fd::AsFd::as_fd(&fd)) {
        return Ok((found, fd));
    }
    // Without the kernel's name, `realpath` names it, and the handle is opened again
    // on that name, so that the pair still agrees.
    let canonical = path.canonicalize()?;
    let fd = rustix::fs::open(&canonical, flags | OFlags::DIRECTORY, Mode::empty())?;
    Ok((canonical, fd))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    /// `statfs`'s type of procfs.
    const PROC_SUPER_MAGIC: u64 = 0x9fa0;

    /// Whether `/proc/self/fd` is procfs's, checked once: a file system mounted over
    /// `/proc` could name a handle's file anything.
    fn proc_is_procfs() -> bool {
        static PROCFS: OnceLock<bool> = OnceLock::new();
        *PROCFS.get_or_init(|| {
            rustix::fs::statfs("/proc/self/fd")
                .is_ok_and(|stat| u64::try_from(stat.f_type).ok() == Some(PROC_SUPER_MAGIC))
        })
    }

    /// The path of the file `fd` holds, as the kernel names it; `None` where it cannot
    /// be read or trusted. The name is read through `/proc/self/fd/N` on each call
    /// rather than through a handle on the directory kept open, which after a `fork`
    /// would still be the parent's table of files.
    pub(super) fn path_of(fd: BorrowedFd<'_>) -> Option<PathBuf> {
        if !proc_is_procfs() {
            return None;
        }
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let name = rustix::fs::readlink(link.as_str(), Vec::new()).ok()?;
        let bytes = name.into_bytes();
        // A file removed since it was opened is named with ` (deleted)` after its old
        // path, and a handle outside this process's root is not named by a path.
        if !bytes.starts_with(b"/") || bytes.ends_with(b" (deleted)") {
            return None;
        }
        Some(PathBuf::from(OsString::from_vec(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// Whatever the path holds — links in the middle and at the end, `..` after a
    /// link, `.`, a doubled slash — the answer is `realpath`'s.
    #[test]
    fn agrees_with_realpath() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::create_dir_all(root.join("x/y")).unwrap();
        std::fs::write(root.join("a/b/c/file.txt"), "x").unwrap();
        symlink(root.join("a/b"), root.join("x/y/to_b")).unwrap();
        symlink("../../a/b/c/file.txt", root.join("x/y/rel_file")).unwrap();
        symlink("to_b", root.join("x/y/chain")).unwrap();
        for path in [
            ".",
            "a",
            "a/b/c/file.txt",
            "x/y/to_b/c/file.txt",
            "x/y/to_b/../b/c",
            "x/y/rel_file",
            "x/y/chain/c",
            "a//b/./c/",
            "x/y/to_b/..",
        ] {
            let given = root.join(path);
            assert_eq!(
                canonicalize(&given).unwrap(),
                given.canonicalize().unwrap(),
                "{path}"
            );
        }
    }

    /// It fails where `realpath` fails: a missing name, a loop of links, a file used
    /// as a directory.
    #[test]
    fn fails_where_realpath_fails() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("file"), "x").unwrap();
        symlink("loop_b", root.join("loop_a")).unwrap();
        symlink("loop_a", root.join("loop_b")).unwrap();
        symlink("missing", root.join("dangling")).unwrap();
        for path in ["missing", "missing/x", "loop_a", "dangling", "file/x"] {
            let given = root.join(path);
            assert!(given.canonicalize().is_err(), "{path}");
            assert!(canonicalize(&given).is_err(), "{path}");
        }
    }

    /// A directory's handle and its name come together; a file is refused.
    #[test]
    fn open_dir_names_its_handle() {
        use rustix::fs::OFlags;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        symlink("real", dir.path().join("link")).unwrap();
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let (path, fd) = open_dir(&dir.path().join("link"), flags).unwrap();
        assert_eq!(path, dir.path().join("real").canonicalize().unwrap());
        let stat = rustix::fs::fstat(&fd).unwrap();
        let real = std::fs::metadata(dir.path().join("real")).unwrap();
        assert_eq!(stat.st_ino, std::os::unix::fs::MetadataExt::ino(&real));
        let error = open_dir(&dir.path().join("file"), flags).unwrap_err();
        assert_eq!(
            error.raw_os_error(),
            Some(rustix::io::Errno::NOTDIR.raw_os_error())
        );
    }

    /// A file removed after it was opened is not named by the kernel's ` (deleted)`
    /// name: the answer falls back to `realpath`, which fails.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_removed_file_is_not_named() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone");
        std::fs::write(&path, "x").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert!(linux::path_of(file.as_fd()).is_some());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(linux::path_of(file.as_fd()), None);
    }
}
