//! The workspace's paths as the argument choices of a small local model's file tools:
//! `file_read` may name one of its files, `file_list` one of its directories,
//! `file_search` either. Listed anew for each request, so a file written in one turn
//! can be read in the next.
//!
//! A small workspace only: past [`MAX_FILES`] files or [`MAX_DIRS`] directories the
//! arguments stay free (the list would crowd a small context, and a path left out
//! could not be named at all). Hidden entries (`.git`, `.oxydra`) and symlinks are
//! not listed, and the walk stops [`MAX_DEPTH`] directories down.

use std::path::{Path, PathBuf};

use oxydra::local::{ArgumentChoice, ArgumentChoices};

/// The most files a listing offers.
pub const MAX_FILES: usize = 64;
/// The most directories a listing offers (the root, `.`, among them).
pub const MAX_DIRS: usize = 32;
/// How deep the walk goes below the root.
pub const MAX_DEPTH: usize = 4;

/// The paths of one workspace, listed on each request.
#[derive(Debug, Clone)]
pub struct WorkspacePaths {
    root: PathBuf,
}

impl WorkspacePaths {
    /// The paths under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }
}

impl ArgumentChoices for WorkspacePaths {
    fn choices(&self) -> Vec<ArgumentChoice> {
        let Some((files, dirs)) = listing(&self.root) else {
            return Vec::new();
        };
        let both: Vec<String> = dirs.iter().chain(&files).cloned().collect();
        let mut choices = vec![ArgumentChoice::new("file_list", "path", dirs)];
        if !files.is_empty() {
            choices.push(ArgumentChoice::new("file_read", "path", files));
        }
        choices.push(ArgumentChoice::new("file_search", "path", both));
        choices
    }
}

/// The files and directories under `root` (relative, `/`-separated, sorted; the
/// directories start with `.`), or `None` when there are more than the caps allow or
/// the root cannot be read.
pub fn listing(root: &Path) -> Option<(Vec<String>, Vec<String>)> {
    let mut files = Vec::new();
    let mut dirs = vec![".".to_owned()];
    let mut pending = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&dir).ok()?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = format!("{prefix}{name}");
            if kind.is_file() {
                files.push(path);
            } else if kind.is_dir() {
                if depth < MAX_DEPTH {
                    pending.push((entry.path(), format!("{path}/"), depth + 1));
                }
                dirs.push(path);
            }
            if files.len() > MAX_FILES || dirs.len() > MAX_DIRS {
                return None;
            }
        }
    }
    files.sort();
    dirs.sort();
    Some((files, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        dir
    }

    #[test]
    fn files_and_directories_are_listed_relative_and_sorted() {
        let dir = workspace(&["README.md", "notes/plan.md", "a/b/c.txt", ".git/HEAD"]);
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let (files, dirs) = listing(dir.path()).unwrap();
        assert_eq!(files, ["README.md", "a/b/c.txt", "notes/plan.md"]);
        assert_eq!(dirs, [".", "a", "a/b", "notes"]);
    }

    #[test]
    fn each_file_tool_gets_its_kind_of_path() {
        let dir = workspace(&["notes/plan.md"]);
        let choices = WorkspacePaths::new(dir.path()).choices();
        let of = |tool: &str| {
            choices
                .iter()
                .find(|c| c.tool == tool)
                .map(|c| c.values.clone())
                .unwrap_or_default()
        };
        assert_eq!(of("file_read"), ["notes/plan.md"]);
        assert_eq!(of("file_list"), [".", "notes"]);
        assert_eq!(of("file_search"), [".", "notes", "notes/plan.md"]);
        assert!(of("file_write").is_empty(), "a new file's path stays free");
    }

    #[test]
    fn a_large_or_missing_workspace_leaves_the_paths_free() {
        let names: Vec<String> = (0..=MAX_FILES).map(|i| format!("f{i}.txt")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = workspace(&names);
        assert!(listing(dir.path()).is_none());
        assert!(WorkspacePaths::new(dir.path()).choices().is_empty());
        assert!(listing(&dir.path().join("missing")).is_none());
        let empty = workspace(&[]);
        let choices = WorkspacePaths::new(empty.path()).choices();
        assert!(choices.iter().all(|c| c.tool != "file_read"), "{choices:?}");
    }

    #[test]
    fn the_walk_stops_at_its_depth() {
        let deep = format!("{}/f.txt", ["d"; MAX_DEPTH + 1].join("/"));
        let shallow = format!("{}/f.txt", ["d"; MAX_DEPTH].join("/"));
        let dir = workspace(&[deep.as_str(), shallow.as_str()]);
        let (files, _) = listing(dir.path()).unwrap();
        assert_eq!(files, [shallow]);
    }
}
