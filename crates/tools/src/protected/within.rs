//! The protected paths that exist inside a workspace, for an OS sandbox: a walk that
//! follows no symlink and stops at each protected directory (it stands for what is
//! beneath it).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::ProtectedPaths;
use super::git_config;

/// The most directory entries looked at: a home directory as workspace may hold
/// millions; what lies past this many is not listed.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// See [`ProtectedPaths::read_only_paths_within`].
pub(super) fn read_only_paths(policy: &ProtectedPaths, workspace: &Path) -> Vec<PathBuf> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
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
    for named in git_config::named_paths(&root) {
        keep(named.path);
    }
    for entry in &policy.own {
        for path in entry.existing() {
            keep(path);
        }
    }
    let mut queue = VecDeque::from([root.clone()]);
    let mut seen = 0usize;
    'walk: while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                break 'walk;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if policy.protected_by_name(&path) {
                keep(path);
                continue;
            }
            if kind.is_dir() {
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
    outermost
}
