//! The protected paths that exist inside a workspace, for an OS sandbox: a walk that
//! follows no symlink and stops at each protected directory (it stands for what is
//! beneath it). A walk that cannot finish fails closed: it is an error, never a
//! partial list.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use super::{ProtectedPaths, git_config, git_dir, python_site};
use crate::error::ToolError;

/// The most directory entries looked at: a home directory as workspace may hold
/// millions; a walk that would look at more is refused.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// See [`ProtectedPaths::try_read_only_paths_within`].
pub(super) fn read_only_paths(
    policy: &ProtectedPaths,
    workspace: &Path,
) -> Result<Vec<PathBuf>, ToolError> {
    read_only_paths_up_to(policy, workspace, MAX_ENTRIES)
}

/// The walk, looking at no more than `limit` entries.
fn read_only_paths_up_to(
    policy: &ProtectedPaths,
    workspace: &Path,
    limit: usize,
) -> Result<Vec<PathBuf>, ToolError> {
    let Ok(root) = workspace.canonicalize() else {
        return Ok(Vec::new());
    };
    let mut found: Vec<PathBuf> = Vec::new();
    let mut keep = |path: PathBuf| {
        if let Ok(canonical) = path.canonicalize()
            && canonical.starts_with(&root)
        {
            found.push(canonical);
        }
        if path.starts_with(&root) && path.symlink_metadata().is_ok() {
            found.push(path);
        }
    };
    for named in git_config::named_paths(&root, &policy.git_config_locations()) {
        keep(named.path);
    }
    for entry in &policy.own {
        for path in entry.existing() {
            keep(path);
        }
    }
    if git_dir::is_git_directory(&root) {
        keep(root.clone());
    }
    let mut queue = VecDeque::from([root.clone()]);
    let mut seen = 0usize;
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let imported =
            python_site::is_site_directory(&dir).then(|| python_site::imported_by_pth(&dir));
        for entry in entries.flatten() {
            seen += 1;
            if seen > limit {
                return Err(ToolError::Failed(format!(
                    "the walk for protected paths in {} was cut short after {limit} entries, \
                     so what lies past them is unknown",
                    root.display()
                )));
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if policy.protected_by_name(&path) || imports(imported.as_ref(), &path) {
                keep(path);
                continue;
            }
            if kind.is_dir() {
                if git_dir::is_git_directory(&path) {
                    keep(path);
                    continue;
                }
                queue.push_back(path);
            }
        }
    }
    found.sort();
    found.dedup();
    let mut outermost: Vec<PathBuf> = Vec::new();
    for path in found {
        if !outermost.iter().any(|dir| path.starts_with(dir)) {
            outermost.push(path);
        }
    }
    Ok(outermost)
}

/// Whether `path`, directly in a site directory whose `.pth` files import `imported`,
/// is one of those modules (or the `__pycache__` that may hold them).
fn imports(imported: Option<&BTreeSet<String>>, path: &Path) -> bool {
    let Some(imported) = imported.filter(|imported| !imported.is_empty()) else {
        return false;
    };
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name == "__pycache__" || imported.contains(python_site::module_of(&name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protected::GitConfigLocations;

    #[test]
    fn a_walk_cut_short_is_an_error_not_a_partial_list() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..20 {
            std::fs::write(dir.path().join(format!("f{n}")), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("zz")).unwrap();
        std::fs::write(dir.path().join("zz/.envrc"), "").unwrap();
        let policy = ProtectedPaths::default().with_git_config(GitConfigLocations::default());
        let err = read_only_paths_up_to(&policy, dir.path(), 10).unwrap_err();
        assert!(
            err.to_string().contains("cut short after 10 entries"),
            "{err}"
        );
        let listed = read_only_paths_up_to(&policy, dir.path(), 100).unwrap();
        assert_eq!(
            listed,
            vec![dir.path().canonicalize().unwrap().join("zz/.envrc")]
        );
    }

    #[test]
    fn git_directories_and_pth_imports_are_listed_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs/objects")).unwrap();
        std::fs::create_dir_all(root.join("docs/refs")).unwrap();
        std::fs::write(root.join("docs/HEAD"), "ref: refs/heads/main\n").unwrap();
        let site = root.join("venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(site.join("requests")).unwrap();
        std::fs::write(site.join("_virtualenv.pth"), "import _virtualenv\n").unwrap();
        std::fs::write(site.join("_virtualenv.py"), "").unwrap();
        let policy = ProtectedPaths::default().with_git_config(GitConfigLocations::default());
        let listed = read_only_paths_up_to(&policy, &root, 1000).unwrap();
        assert_eq!(
            listed,
            vec![
                root.join("docs"),
                site.join("_virtualenv.pth"),
                site.join("_virtualenv.py"),
            ]
        );
    }
}
