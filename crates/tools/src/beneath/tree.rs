//! Walking a directory tree by handles: a directory's entries are read from its
//! handle and each child is opened relative to it, never through a symlink.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

/// What a directory entry is, as seen without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// The entries of the directory open as `dir`, sorted by name, without `.` and `..`.
pub(crate) fn entries(dir: impl AsFd) -> io::Result<Vec<(OsString, EntryKind)>> {
    let dir = dir.as_fd();
    let mut found = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_or(EntryKind::Other, |stat| {
                    kind_of(FileType::from_raw_mode(stat.st_mode))
                }),
            known => kind_of(known),
        };
        found.push((name.to_owned(), kind));
    }
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

fn kind_of(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::Directory => EntryKind::Dir,
        FileType::RegularFile => EntryKind::File,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// Open the child directory `name` of `dir` for listing; fails if it is (now) a
/// symlink or not a directory.
pub(crate) fn open_child_dir(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        Mode::empty(),
    )?))
}

/// Open the child `name` of `dir` for reading; fails if it is (now) a symlink, and
/// does not block on a FIFO: check that it is a regular file before reading.
pub(crate) fn open_child_file(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        Mode::empty(),
    )?))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn entries_are_sorted_and_symlinks_are_never_followed() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("d")).unwrap();
        std::fs::write(ws.path().join("b.txt"), "").unwrap();
        symlink(out.path(), ws.path().join("a-link")).unwrap();
        symlink(out.path().join("f"), ws.path().join("c-file-link")).unwrap();
        std::fs::write(out.path().join("f"), "outside").unwrap();
        let dir = File::open(ws.path()).unwrap();
        let got = entries(&dir).unwrap();
        let want = [
            ("a-link", EntryKind::Symlink),
            ("b.txt", EntryKind::File),
            ("c-file-link", EntryKind::Symlink),
            ("d", EntryKind::Dir),
        ];
        assert_eq!(got.len(), want.len());
        for ((name, kind), (want_name, want_kind)) in got.iter().zip(want) {
            assert_eq!((name.to_str().unwrap(), *kind), (want_name, want_kind));
        }
        assert!(open_child_dir(&dir, OsStr::new("d")).is_ok());
        assert!(open_child_dir(&dir, OsStr::new("a-link")).is_err());
        assert!(open_child_file(&dir, OsStr::new("c-file-link")).is_err());
        assert!(open_child_file(&dir, OsStr::new("b.txt")).is_ok());
    }
}
