//! Directories git would take for a repository, recognised by content rather than by
//! name: a bare repository (or a work tree's administrative directory) made of plain
//! files, such as `docs/` holding `HEAD`, `objects/` and `refs/`. Running `git status`
//! there, or a prompt that does on entering it, loads its `config`, whose
//! `core.fsmonitor` or hooks run commands.
//!
//! Git's test (`is_git_directory` in git's `setup.c`): a directory is a git directory
//! when it holds a valid `HEAD` and its *common directory* holds `objects` and `refs`
//! that `access(X_OK)` accepts; the common directory is the directory itself, or where
//! a `commondir` file in it points (a linked work tree's directory under
//! `worktrees/<id>/`). Discovery (`setup_git_directory_gently_1`) tests every directory
//! from the current one up, so anything beneath a git directory is inside a repository.
//!
//! This module asks less than git does, to be safe: an entry named `HEAD`, `objects`
//! or `refs` counts whatever its kind or content (a symlink is not followed), and a
//! `commondir` file beside a `HEAD` counts as both `objects` and `refs` (what it points
//! to may lie outside the workspace, or be made complete later). The filesystem is read
//! at each call; nothing is cached.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// The names whose presence makes a directory a git directory (`HEAD` in lower case,
/// to compare a name being created without regard to case).
const HEAD: &str = "HEAD";
const HEAD_FOLDED: &str = "head";
const OBJECTS: &str = "objects";
const REFS: &str = "refs";
const COMMONDIR: &str = "commondir";

/// Why writing `path` (absolute, as named or resolved) in the workspace `root` is
/// refused because of a git directory, if it is: it is one or lies beneath one, or
/// creating it (or the first of its directories that does not exist yet) would make its
/// parent one. Only directories from `root` down to `path`'s parent are looked at, and
/// the look stops at the first that is a symlink or does not exist: a symlink's target
/// is ruled on as the resolved form of the path.
pub(super) fn refusal(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let names: Vec<&OsStr> = rest
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let mut dir = root.to_path_buf();
    for (index, name) in names.iter().enumerate() {
        if is_git_directory(&dir) {
            return Some(format!(
                "inside `{}`, which git takes for a repository (it holds `HEAD`, `objects` \
                 and `refs`), whose config and hooks git loads and runs",
                shown(root, &dir)
            ));
        }
        let child = dir.join(name);
        match child.symlink_metadata() {
            Ok(meta) if meta.is_dir() && index + 1 < names.len() => dir = child,
            // The last name exists: a git directory itself may not be changed or
            // removed either; anything else (a file, a symlink, a plain directory) may.
            Ok(meta) => {
                return (meta.is_dir() && is_git_directory(&child)).then(|| {
                    format!(
                        "`{}`, a directory git takes for a repository (it holds `HEAD`, \
                         `objects` and `refs`), whose config and hooks git loads and runs",
                        shown(root, &child)
                    )
                });
            }
            // The first name that does not exist: creating it must not complete `dir`.
            Err(_) => {
                return completes(&dir, name).then(|| {
                    format!(
                        "a `{}` that would make `{}` a directory git takes for a repository \
                         (`HEAD`, `objects` and `refs` together), whose config and hooks git \
                         loads and runs",
                        name.to_string_lossy(),
                        shown(root, &dir)
                    )
                });
            }
        }
    }
    None
}

/// Whether `dir` is a git directory (see the module docs), looking at it without
/// following a symlink in it.
pub(super) fn is_git_directory(dir: &Path) -> bool {
    let has = |name: &str| dir.join(name).symlink_metadata().is_ok();
    has(HEAD) && (has(COMMONDIR) || (has(OBJECTS) && has(REFS)))
}

/// Whether creating `name` in `dir` would make `dir` a git directory. The name is
/// compared without regard to case (on a case-insensitive filesystem `head` is `HEAD`).
fn completes(dir: &Path, name: &OsStr) -> bool {
    let name = name.to_string_lossy().to_lowercase();
    let has = |other: &str| dir.join(other).symlink_metadata().is_ok();
    let head = name == HEAD_FOLDED || has(HEAD);
    let commondir = name == COMMONDIR || has(COMMONDIR);
    let objects = name == OBJECTS || has(OBJECTS);
    let refs = name == REFS || has(REFS);
    let counts = [HEAD_FOLDED, OBJECTS, REFS, COMMONDIR].contains(&name.as_str());
    counts && head && (commondir || (objects && refs))
}

fn shown(root: &Path, dir: &Path) -> String {
    match dir.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => dir.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_head_objects_and_refs_is_one_and_with_two_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir(d.join("objects")).unwrap();
        assert!(!is_git_directory(d));
        assert!(completes(d, OsStr::new("refs")));
        assert!(completes(d, OsStr::new("REFS")));
        assert!(!completes(d, OsStr::new("refs.txt")));
        std::fs::create_dir(d.join("refs")).unwrap();
        assert!(is_git_directory(d));
    }

    #[test]
    fn a_commondir_beside_head_makes_one() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("commondir"), "../..\n").unwrap();
        assert!(completes(d, OsStr::new("HEAD")));
        assert!(!completes(d, OsStr::new("gitdir")));
        std::fs::write(d.join("HEAD"), "0123\n").unwrap();
        assert!(is_git_directory(d));
    }
}
