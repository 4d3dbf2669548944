//! The portable way beneath the root: one `openat(dir, name, O_NOFOLLOW)` per name,
//! each relative to the handle of the directory before it.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{DIR_HANDLE, NEW_DIR_MODE, escape};

/// What to do with a directory of the path that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// Fail with `ENOENT`.
    Fail,
    /// Create it (`mkdirat`), then go on into it.
    Create,
}

/// Open `names` below `root` with `flags`, following no symlink.
pub(super) fn open(root: BorrowedFd<'_>, names: &[&OsStr], flags: OFlags) -> io::Result<OwnedFd> {
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(root, ".", flags, Mode::empty())?);
    };
    let dir = open_dirs(root, parents, Missing::Fail)?;
    rustix::fs::openat(&dir, *last, flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|err| explain(dir.as_fd(), last, err))
}

/// A handle on the directory `names` below `root`, following no symlink, with the
/// missing directories created or not as `missing` says.
pub(super) fn open_dirs(
    root: BorrowedFd<'_>,
    names: &[&OsStr],
    missing: Missing,
) -> io::Result<OwnedFd> {
    let mut dir = rustix::fs::openat(root, ".", DIR_HANDLE, Mode::empty())?;
    for name in names {
        let next = match open_dir(&dir, name) {
            Err(Errno::NOENT) if missing == Missing::Create => {
                match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(NEW_DIR_MODE)) {
                    // Made by someone else meanwhile: it is checked on the way in.
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(err) => return Err(explain(dir.as_fd(), name, err)),
                }
                open_dir(&dir, name)
            }
            other => other,
        };
        dir = next.map_err(|err| explain(dir.as_fd(), name, err))?;
    }
    Ok(dir)
}

fn open_dir(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(dir, name, DIR_HANDLE | OFlags::NOFOLLOW, Mode::empty())
}

/// The error to report for `err`, met opening `name` in `dir`: an [`escape`] if
/// `name` is a symlink (whatever `errno` the system gives for `O_NOFOLLOW` on one:
/// `ELOOP`, `ENOTDIR`, `EMLINK`, `EFTYPE`), else `err` itself.
pub(super) fn explain(dir: BorrowedFd<'_>, name: &OsStr, err: Errno) -> io::Error {
    if err != Errno::NOENT && is_symlink(dir, name) {
        escape()
    } else {
        err.into()
    }
}

fn is_symlink(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::symlink;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::super::is_escape;
    use super::*;

    fn names(path: &str) -> Vec<&OsStr> {
        path.split('/').map(OsStr::new).collect()
    }

    fn root_fd(path: &std::path::Path) -> OwnedFd {
        rustix::fs::open(path, DIR_HANDLE, Mode::empty()).unwrap()
    }

    #[test]
    fn walks_plain_names_and_refuses_every_symlink() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
        std::fs::write(ws.path().join("a/b/f.txt"), "inside").unwrap();
        symlink(out.path(), ws.path().join("a/out")).unwrap();
        symlink("b", ws.path().join("a/in")).unwrap();
        symlink("f.txt", ws.path().join("a/b/link")).unwrap();
        let root = root_fd(ws.path());
        let mut text = String::new();
        std::fs::File::from(open(root.as_fd(), &names("a/b/f.txt"), OFlags::RDONLY).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "inside");
        for path in ["a/out/x", "a/in/f.txt", "a/b/link", "a/out"] {
            let err = open(root.as_fd(), &names(path), OFlags::RDONLY).unwrap_err();
            assert!(is_escape(&err), "{path}: {err}");
        }
        let err = open(root.as_fd(), &names("a/nope/f.txt"), OFlags::RDONLY).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let err = open(root.as_fd(), &names("a/b/f.txt/x"), OFlags::RDONLY).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
    }

    #[test]
    fn creates_missing_directories_but_not_through_symlinks() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        symlink(out.path(), ws.path().join("out")).unwrap();
        let root = root_fd(ws.path());
        open_dirs(root.as_fd(), &names("x/y/z"), Missing::Create).unwrap();
        assert!(ws.path().join("x/y/z").is_dir());
        let err = open_dirs(root.as_fd(), &names("out/new"), Missing::Create).unwrap_err();
        assert!(is_escape(&err), "{err}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
        let err = open_dirs(root.as_fd(), &names("q/r"), Missing::Fail).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    /// The walk is the only defence where `openat2` is missing, so it gets the
    /// race too: `sub` flips between a directory and a symlink to outside while
    /// reads and creates go through it; none may reach outside.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_directory_swapped_for_a_symlink_mid_walk_never_leads_outside() {
        const ROUNDS: u64 = 300;
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        std::fs::write(ws.path().join("sub/f.txt"), "inside").unwrap();
        std::fs::write(out.path().join("f.txt"), "outside").unwrap();
        symlink(out.path(), ws.path().join("link")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = {
            let (ws, stop, swaps) = (ws.path().to_owned(), stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        ws.join("sub"),
                        rustix::fs::CWD,
                        ws.join("link"),
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let root = root_fd(ws.path());
        let mut escapes = 0;
        for round in 0..ROUNDS {
            // Each round starts after the swapper has moved on: the two interleave.
            while swaps.load(Ordering::Relaxed) <= round {
                std::thread::yield_now();
            }
            if let Ok(fd) = open(root.as_fd(), &names("sub/f.txt"), OFlags::RDONLY) {
                let mut text = String::new();
                std::fs::File::from(fd).read_to_string(&mut text).unwrap();
                escapes += usize::from(text != "inside");
            }
            let name = format!("w{round}.txt");
            if let Ok(dir) = open_dirs(root.as_fd(), &names("sub"), Missing::Create) {
                let _ = rustix::fs::openat(
                    &dir,
                    name.as_str(),
                    OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW,
                    Mode::from_raw_mode(0o644),
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(escapes, 0, "reads that returned outside content");
        let landed: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "f.txt")
            .collect();
        assert!(landed.is_empty(), "writes that landed outside: {landed:?}");
    }
}
