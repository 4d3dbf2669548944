//! Opens workspace paths through a handle on the workspace root, so that nothing
//! swapped into the tree while a tool runs can take an open outside it.
//!
//! [`WorkspacePolicy::resolve`](crate::WorkspacePolicy::resolve) canonicalises a
//! path once: that follows the symlinks that stay inside, names the file in
//! messages and refuses every way out. The canonical path it returns holds no
//! symlink, so [`WorkspaceDir`] opens it relative to the root's file descriptor
//! following no symlink at all — one `openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` on Linux, and a walk of
//! `openat(dir, name, O_NOFOLLOW)` one name at a time elsewhere or where the
//! kernel lacks `openat2`. A symlink met there was put in after the check (a
//! directory swapped for a link to somewhere else): the open is refused with
//! [`escape`], which the tools report as outside the workspace. Directory walks
//! ([`entries`], [`open_child_dir`], [`open_child_file`]) go from handle to handle
//! and never follow a symlink either.

#[cfg(target_os = "linux")]
mod openat2;
mod tree;
mod walk;

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

pub(crate) use tree::{EntryKind, entries, open_child_dir, open_child_file};

/// Flags of the directory handles a walk goes through: `O_PATH` where there is
/// one (no read permission needed to pass through), else read-only.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR_HANDLE: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR_HANDLE: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Mode of the files and directories the tools create (less the umask).
const NEW_FILE_MODE: u32 = 0o666;
const NEW_DIR_MODE: u32 = 0o777;

/// The error of an open refused because it would leave the workspace (or met a
/// symlink where the checked path had none): `EXDEV`, the kernel's own answer to
/// an `openat2` that would cross out of its directory.
pub(crate) fn escape() -> io::Error {
    Errno::XDEV.into()
}

/// Whether `err` is an [`escape`].
pub(crate) fn is_escape(err: &io::Error) -> bool {
    err.raw_os_error() == Some(Errno::XDEV.raw_os_error())
}

/// The workspace root, held open; every file tool opens its paths through it.
#[derive(Debug)]
pub(crate) struct WorkspaceDir {
    root: PathBuf,
    fd: OwnedFd,
}

impl WorkspaceDir {
    /// Hold `root` (the canonical workspace root) open.
    pub(crate) fn open(root: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(root, DIR_HANDLE, Mode::empty())?;
        Ok(Self {
            root: root.to_owned(),
            fd,
        })
    }

    /// Open `absolute` (a resolved path under the root) for reading. A directory or
    /// a FIFO opens too, without blocking: check what the handle is before use.
    pub(crate) fn open_read(&self, absolute: &Path) -> io::Result<File> {
        self.open_with(absolute, OFlags::RDONLY)
    }

    /// Open `absolute` (a resolved path under the root) for reading and writing; a
    /// directory fails with `EISDIR`.
    pub(crate) fn open_read_write(&self, absolute: &Path) -> io::Result<File> {
        self.open_with(absolute, OFlags::RDWR)
    }

    /// Create `absolute` (a resolved path under the root), or truncate it if it
    /// exists, creating its missing parent directories beneath the root. Returns
    /// the file and whether it existed. The last name is never followed if it is a
    /// symlink; a directory fails with `EISDIR`.
    pub(crate) fn create(&self, absolute: &Path) -> io::Result<(File, bool)> {
        let names = self.names(absolute)?;
        let Some((name, parents)) = names.split_last() else {
            return Err(Errno::ISDIR.into());
        };
        let parent = walk::open_dirs(self.fd.as_fd(), parents, walk::Missing::Create)?;
        let flags =
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let created = rustix::fs::openat(
            &parent,
            *name,
            flags | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(NEW_FILE_MODE),
        );
        match created {
            Ok(fd) => return Ok((File::from(fd), false)),
            Err(Errno::EXIST) => {}
            Err(err) => return Err(walk::explain(parent.as_fd(), name, err)),
        }
        let fd = rustix::fs::openat(&parent, *name, flags | OFlags::TRUNC, Mode::empty())
            .map_err(|err| walk::explain(parent.as_fd(), name, err))?;
        Ok((File::from(fd), true))
    }

    /// A handle on the directory `names` below the root (plain names only), following
    /// no symlink; a missing directory fails with `ENOENT`.
    pub(crate) fn dir_below(&self, names: &[&OsStr]) -> io::Result<OwnedFd> {
        walk::open_dirs(self.fd.as_fd(), names, walk::Missing::Fail)
    }

    /// Open `absolute` with `access` (and never blocking on a FIFO nor taking a
    /// terminal), beneath the root and following no symlink.
    fn open_with(&self, absolute: &Path, access: OFlags) -> io::Result<File> {
        let names = self.names(absolute)?;
        let flags = access | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        #[cfg(target_os = "linux")]
        if let Some(opened) = openat2::open(self.fd.as_fd(), &names, flags) {
            return opened.map(File::from);
        }
        walk::open(self.fd.as_fd(), &names, flags).map(File::from)
    }

    /// The names of `absolute` below the root; anything but plain names (a `..`,
    /// another root) is an [`escape`].
    fn names<'a>(&self, absolute: &'a Path) -> io::Result<Vec<&'a OsStr>> {
        let relative = absolute.strip_prefix(&self.root).map_err(|_| escape())?;
        relative
            .components()
            .filter(|component| *component != Component::CurDir)
            .map(|component| match component {
                Component::Normal(name) => Ok(name),
                _ => Err(escape()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    use super::*;

    struct Setup {
        ws: tempfile::TempDir,
        out: tempfile::TempDir,
        dir: WorkspaceDir,
    }

    impl Setup {
        fn root(&self) -> PathBuf {
            self.ws.path().canonicalize().unwrap()
        }
    }

    fn setup() -> Setup {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        std::fs::write(ws.path().join("sub/f.txt"), "inside").unwrap();
        std::fs::write(out.path().join("f.txt"), "outside").unwrap();
        let dir = WorkspaceDir::open(&ws.path().canonicalize().unwrap()).unwrap();
        Setup { ws, out, dir }
    }

    fn read(file: io::Result<File>) -> String {
        let mut text = String::new();
        file.unwrap().read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn opens_plain_paths_beneath_the_root() {
        let s = setup();
        assert_eq!(read(s.dir.open_read(&s.root().join("sub/f.txt"))), "inside");
        assert_eq!(
            read(s.dir.open_read(&s.root().join("./sub/./f.txt"))),
            "inside"
        );
        let root = s.dir.open_read(&s.root()).unwrap();
        assert!(root.metadata().unwrap().is_dir());
        let missing = s.dir.open_read(&s.root().join("sub/nope")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_symlink_in_the_path_is_an_escape_even_one_that_stays_inside() {
        let s = setup();
        let root = s.root();
        symlink(s.out.path(), root.join("out")).unwrap();
        symlink(root.join("sub"), root.join("in")).unwrap();
        symlink("sub/f.txt", root.join("file-link")).unwrap();
        for path in ["out/f.txt", "in/f.txt", "file-link", "out"] {
            let err = s.dir.open_read(&root.join(path)).unwrap_err();
            assert!(is_escape(&err), "{path}: {err}");
        }
    }

    #[test]
    fn paths_not_under_the_root_are_escapes() {
        let s = setup();
        for path in [
            s.out.path().join("f.txt"),
            s.root().join("sub/../sub/f.txt"),
            PathBuf::from("/etc/passwd"),
        ] {
            let err = s.dir.open_read(&path).unwrap_err();
            assert!(is_escape(&err), "{}: {err}", path.display());
        }
    }

    #[test]
    fn create_makes_parents_and_reports_whether_the_file_existed() {
        let s = setup();
        let root = s.root();
        let (mut file, existed) = s.dir.create(&root.join("a/b/new.txt")).unwrap();
        assert!(!existed);
        file.write_all(b"one").unwrap();
        let (mut file, existed) = s.dir.create(&root.join("a/b/new.txt")).unwrap();
        assert!(existed);
        assert_eq!(file.metadata().unwrap().len(), 0, "truncated");
        file.write_all(b"two").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("a/b/new.txt")).unwrap(),
            "two"
        );
        let err = s.dir.create(&root.join("sub")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        let err = s.dir.create(&root).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    }

    #[test]
    fn create_never_goes_through_a_symlink() {
        let s = setup();
        let root = s.root();
        symlink(s.out.path(), root.join("out")).unwrap();
        symlink(s.out.path().join("new.txt"), root.join("dangling")).unwrap();
        symlink(s.out.path().join("f.txt"), root.join("to-file")).unwrap();
        for path in ["out/x.txt", "out/deep/x.txt", "dangling", "to-file"] {
            let err = s.dir.create(&root.join(path)).unwrap_err();
            assert!(is_escape(&err), "{path}: {err}");
        }
        let outside: Vec<_> = std::fs::read_dir(s.out.path()).unwrap().collect();
        assert_eq!(outside.len(), 1, "only f.txt is outside");
        assert_eq!(
            std::fs::read_to_string(s.out.path().join("f.txt")).unwrap(),
            "outside"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_fifo_opens_without_blocking() {
        let s = setup();
        let fifo = s.root().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let file = s.dir.open_read(&fifo).unwrap();
        assert!(!file.metadata().unwrap().is_file());
    }
}
