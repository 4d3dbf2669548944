//! Keeps the file tools inside the workspace.
//!
//! A path is joined to the workspace root; the longest part of it that exists is
//! canonicalised (which follows every symlink) and must lie under the canonical
//! root. The part that does not exist yet (a file about to be written) may only
//! be plain names — no `..` — and its first name must not be a dangling symlink,
//! so nothing created later can land outside either.
//!
//! This is the check, made once per call; the resolved path it returns holds no
//! symlink and no `..`. The file tools never open that path by name: they open it
//! beneath a handle on the root following no symlink (`crate::beneath`), so a
//! directory swapped for a symlink after the check cannot lead them outside.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::ToolError;

/// The longest path accepted, in bytes (Linux's `PATH_MAX`). Resolving walks the path
/// back one name at a time, so a path of a million names would cost minutes.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// Resolves the paths a model gives against the workspace root.
#[derive(Debug, Clone)]
pub struct WorkspacePolicy {
    root: PathBuf,
}

/// A path checked to lie inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The absolute path (symlinks of its existing part resolved), to open beneath
    /// the root handle.
    pub absolute: PathBuf,
    /// The path relative to the workspace root, for messages (`.` for the root).
    pub relative: String,
}

impl WorkspacePolicy {
    /// A policy for `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ToolError> {
        let given = root.as_ref();
        let root = given.canonicalize().map_err(|source| ToolError::Io {
            action: "opening the workspace",
            path: given.display().to_string(),
            source,
        })?;
        if !root.is_dir() {
            return Err(ToolError::Failed(format!(
                "the workspace `{}` is not a directory",
                given.display()
            )));
        }
        Ok(Self { root })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve `path` (relative to the root, or absolute inside it). `..`,
    /// absolute paths and symlinks that lead outside the workspace are refused
    /// with [`ToolError::OutsideWorkspace`]. An empty path means the root.
    pub fn resolve(&self, path: &str) -> Result<ResolvedPath, ToolError> {
        let outside = || ToolError::OutsideWorkspace {
            path: path.to_owned(),
            workspace: self.root.clone(),
        };
        if path.len() > MAX_PATH_BYTES {
            return Err(ToolError::InvalidArguments {
                message: format!(
                    "the path is {} bytes long; the longest allowed is {MAX_PATH_BYTES}",
                    path.len()
                ),
            });
        }
        if path.contains('\0') {
            return Err(ToolError::InvalidArguments {
                message: format!("path {path:?} contains a NUL byte"),
            });
        }
        let given = Path::new(if path.is_empty() { "." } else { path });
        let mut existing = self.root.join(given);
        let mut missing: Vec<OsString> = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(canonical) => break canonical,
                Err(_) => {
                    let last = existing.components().next_back();
                    match last {
                        Some(Component::Normal(name)) => {
                            missing.push(name.to_owned());
                            existing.pop();
                        }
                        // `..` or `.` after a part that does not exist: we cannot
                        // tell where it leads without following it, so refuse.
                        Some(Component::ParentDir) => return Err(outside()),
                        Some(Component::CurDir) => {
                            existing.pop();
                        }
                        _ => return Err(outside()),
                    }
                }
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(outside());
        }
        let mut absolute = canonical;
        if let Some(first) = missing.last() {
            // The first missing name may still be a dangling symlink.
            match absolute.join(first).symlink_metadata() {
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) if err.kind() == io::ErrorKind::NotADirectory => {}
                _ => return Err(outside()),
            }
        }
        for name in missing.iter().rev() {
            absolute.push(name);
        }
        let relative = match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => return Err(outside()),
        };
        Ok(ResolvedPath { absolute, relative })
    }

    /// The text of the regular file `path` names in the workspace, when it resolves inside
    /// (as [`WorkspacePolicy::resolve`]), opens beneath the root following no symlink (as
    /// the file tools open), holds at most `max_bytes` and is UTF-8; else `None`. For
    /// showing a file's old content (a diff), never for a tool's answer.
    pub fn read_text(&self, path: &str, max_bytes: u64) -> Option<String> {
        let resolved = self.resolve(path).ok()?;
        let dir = crate::beneath::WorkspaceDir::open(&self.root).ok()?;
        let file = dir.open_read(&resolved.absolute).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > max_bytes {
            return None;
        }
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(file, max_bytes), &mut bytes).ok()?;
        String::from_utf8(bytes).ok()
    }

    /// `absolute` (a path under the root) relative to the root, for messages.
    pub fn relative(&self, absolute: &Path) -> String {
        match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => absolute.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    struct Setup {
        _dirs: (tempfile::TempDir, tempfile::TempDir),
        policy: WorkspacePolicy,
        outside: PathBuf,
    }

    fn setup() -> Setup {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("secret.txt"), "secret").unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        std::fs::write(ws.path().join("src/main.rs"), "fn main() {}").unwrap();
        let policy = WorkspacePolicy::new(ws.path()).unwrap();
        let outside = out.path().canonicalize().unwrap();
        Setup {
            _dirs: (ws, out),
            policy,
            outside,
        }
    }

    /// A path of half a million names is refused at once (walking it back one name
    /// at a time took 20 s).
    #[test]
    fn overlong_paths_are_refused_before_any_lookup() {
        let s = setup();
        let started = std::time::Instant::now();
        let err = s.policy.resolve(&"d/".repeat(500_000)).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { ref message } if message.contains("1000000 bytes")),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let longest = "d".repeat(MAX_PATH_BYTES);
        assert!(!matches!(
            s.policy.resolve(&longest),
            Err(ToolError::InvalidArguments { .. })
        ));
    }

    fn assert_outside(policy: &WorkspacePolicy, path: &str) {
        match policy.resolve(path) {
            Err(ToolError::OutsideWorkspace { path: p, .. }) => assert_eq!(p, path),
            other => panic!("{path}: expected OutsideWorkspace, got {other:?}"),
        }
    }

    #[test]
    fn plain_paths_resolve_inside() {
        let s = setup();
        let r = s.policy.resolve("src/main.rs").unwrap();
        assert_eq!(r.relative, "src/main.rs");
        assert_eq!(r.absolute, s.policy.root().join("src/main.rs"));
        assert_eq!(s.policy.resolve("").unwrap().relative, ".");
        assert_eq!(s.policy.resolve(".").unwrap().relative, ".");
        assert_eq!(
            s.policy.resolve("./src/../src/main.rs").unwrap().relative,
            "src/main.rs"
        );
        // New files and directories, not yet existing.
        assert_eq!(
            s.policy.resolve("new/deep/file.txt").unwrap().relative,
            "new/deep/file.txt"
        );
        // An absolute path inside the workspace is fine.
        let abs = s.policy.root().join("src/main.rs");
        assert_eq!(
            s.policy.resolve(abs.to_str().unwrap()).unwrap().relative,
            "src/main.rs"
        );
    }

    #[test]
    fn dot_dot_escapes_are_refused() {
        let s = setup();
        assert_outside(&s.policy, "../x");
        assert_outside(&s.policy, "..");
        assert_outside(&s.policy, "src/../../x");
        assert_outside(&s.policy, "missing/../../x");
        assert_outside(&s.policy, "missing/../x");
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let s = setup();
        assert_outside(&s.policy, "/etc/passwd");
        assert_outside(&s.policy, "/");
        assert_outside(&s.policy, "/nonexistent/new.txt");
    }

    #[test]
    fn symlinked_file_and_dir_leading_outside_are_refused() {
        let s = setup();
        let root = s.policy.root().to_owned();
        symlink(s.outside.join("secret.txt"), root.join("link.txt")).unwrap();
        symlink(&s.outside, root.join("linkdir")).unwrap();
        symlink(s.outside.join("not-yet"), root.join("dangling")).unwrap();
        symlink(root.join("src"), root.join("inner")).unwrap();
        assert_outside(&s.policy, "link.txt");
        assert_outside(&s.policy, "linkdir");
        assert_outside(&s.policy, "linkdir/secret.txt");
        assert_outside(&s.policy, "linkdir/new-file.txt");
        assert_outside(&s.policy, "linkdir/new/dir/file.txt");
        assert_outside(&s.policy, "dangling");
        // A symlink that stays inside is fine.
        assert_eq!(
            s.policy.resolve("inner/main.rs").unwrap().relative,
            "src/main.rs"
        );
    }

    #[test]
    fn read_text_follows_no_symlink_out_and_reads_only_small_files() {
        let s = setup();
        let root = s.policy.root().to_owned();
        symlink(&s.outside, root.join("linkdir")).unwrap();
        symlink(s.outside.join("secret.txt"), root.join("link.txt")).unwrap();
        assert_eq!(
            s.policy.read_text("src/main.rs", 100).as_deref(),
            Some("fn main() {}")
        );
        assert_eq!(s.policy.read_text("linkdir/secret.txt", 100), None);
        assert_eq!(s.policy.read_text("link.txt", 100), None);
        assert_eq!(s.policy.read_text("../x", 100), None);
        assert_eq!(s.policy.read_text("src", 100), None);
        assert_eq!(s.policy.read_text("src/main.rs", 3), None);
    }

    #[test]
    fn nul_bytes_and_missing_roots_are_errors() {
        let s = setup();
        assert!(matches!(
            s.policy.resolve("a\0b"),
            Err(ToolError::InvalidArguments { .. })
        ));
        assert!(WorkspacePolicy::new("/definitely/not/here").is_err());
    }
}
