//! A task's starting workspace ([`Fixture`]) and the path rules of a suite: every
//! path stays inside its folder (no `..`, no absolute path, no symlink out).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// What a task's workspace holds before the run. Each run gets a fresh copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fixture {
    /// An empty workspace.
    #[default]
    Empty,
    /// Files given inline: relative path → content (`files = { "a.txt" = "…" }`).
    Files(BTreeMap<PathBuf, String>),
    /// A folder copied whole (`fixture = "fixtures/x"`, inside the suite's folder;
    /// the absolute path once loaded). It may hold no symlink.
    Folder(PathBuf),
}

/// `path` as a relative path with no `..`, root or prefix, and not empty.
pub(super) fn relative(path: &str) -> Result<PathBuf, String> {
    let candidate = Path::new(path);
    let plain = candidate
        .components()
        .all(|component| matches!(component, Component::Normal(_) | Component::CurDir));
    if path.is_empty() || !plain || candidate.components().next().is_none() {
        return Err(format!(
            "{path:?} must be a relative path inside the folder (no `..`, not absolute)"
        ));
    }
    Ok(candidate.to_path_buf())
}

/// The fixture folder `dir` of a suite in `suite_folder`: relative, inside the
/// suite's folder once symlinks are resolved, a folder, and with no symlink in it.
pub(super) fn folder(suite_folder: &Path, dir: &str) -> Result<Fixture, String> {
    let path = relative(dir)?;
    let base = suite_folder
        .canonicalize()
        .map_err(|error| format!("the suite's folder: {error}"))?;
    let resolved = base
        .join(&path)
        .canonicalize()
        .map_err(|error| format!("{dir:?}: {error}"))?;
    if !resolved.starts_with(&base) {
        return Err(format!(
            "{dir:?} leads outside the suite's folder (through a symlink)"
        ));
    }
    if !resolved.is_dir() {
        return Err(format!("{dir:?} is not a folder"));
    }
    walk(&resolved, &mut |_, _| Ok(()))?;
    Ok(Fixture::Folder(resolved))
}

/// Calls `visit(relative path, is_dir)` for everything under `root`, refusing
/// symlinks and anything but files and folders.
fn walk(
    root: &Path,
    visit: &mut dyn FnMut(&Path, bool) -> Result<(), String>,
) -> Result<(), String> {
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let entries = std::fs::read_dir(root.join(&relative))
            .map_err(|error| format!("{}: {error}", relative.display()))?;
        for entry in entries {
            let entry = entry.map_err(|error| error.to_string())?;
            let path = relative.join(entry.file_name());
            let kind = entry.file_type().map_err(|error| error.to_string())?;
            if kind.is_dir() {
                visit(&path, true)?;
                pending.push(path);
            } else if kind.is_file() {
                visit(&path, false)?;
            } else {
                return Err(format!(
                    "{} in the fixture is a symlink or special file (not allowed)",
                    path.display()
                ));
            }
        }
    }
    Ok(())
}

impl Fixture {
    /// Writes the fixture into the empty folder `workspace`. Blocking.
    ///
    /// # Errors
    /// The I/O error, or a symlink found in a fixture folder, as text.
    pub fn materialize(&self, workspace: &Path) -> Result<(), String> {
        match self {
            Self::Empty => Ok(()),
            Self::Files(files) => {
                for (path, content) in files {
                    let target = workspace.join(path);
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent).map_err(|error| error.to_string())?;
                    }
                    std::fs::write(&target, content)
                        .map_err(|error| format!("{}: {error}", path.display()))?;
                }
                Ok(())
            }
            Self::Folder(source) => walk(source, &mut |path, is_dir| {
                let target = workspace.join(path);
                let done = if is_dir {
                    std::fs::create_dir_all(&target)
                } else {
                    std::fs::copy(source.join(path), &target).map(|_| ())
                };
                done.map_err(|error| format!("{}: {error}", path.display()))
            }),
        }
    }
}

/// The text of `path` in `workspace`, refusing a path that resolves outside it.
pub(super) fn read_in(workspace: &Path, path: &Path) -> Result<String, String> {
    let base = workspace
        .canonicalize()
        .map_err(|error| error.to_string())?;
    let resolved = base.join(path).canonicalize().map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            "it does not exist".to_owned()
        } else {
            error.to_string()
        }
    })?;
    if !resolved.starts_with(&base) {
        return Err("it leads outside the workspace".into());
    }
    let bytes = std::fs::read(&resolved).map_err(|error| error.to_string())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_folder_must_stay_inside_the_suite_folder() {
        let root = tempfile::tempdir().unwrap();
        let suite = root.path().join("suite");
        std::fs::create_dir_all(suite.join("fx/sub")).unwrap();
        std::fs::write(suite.join("fx/sub/a.txt"), "a").unwrap();
        std::fs::create_dir(root.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(root.path().join("outside"), suite.join("out")).unwrap();
        assert!(matches!(folder(&suite, "fx"), Ok(Fixture::Folder(_))));
        assert!(
            folder(&suite, "../outside")
                .unwrap_err()
                .contains("relative")
        );
        assert!(folder(&suite, "/tmp").unwrap_err().contains("relative"));
        assert!(folder(&suite, "out").unwrap_err().contains("outside"));
        std::os::unix::fs::symlink("/etc/passwd", suite.join("fx/link")).unwrap();
        assert!(folder(&suite, "fx").unwrap_err().contains("symlink"));
    }

    #[test]
    fn a_fixture_is_copied_into_the_workspace() {
        let source = tempfile::tempdir().unwrap();
        std::fs::create_dir(source.path().join("d")).unwrap();
        std::fs::write(source.path().join("d/b.txt"), "b").unwrap();
        let workspace = tempfile::tempdir().unwrap();
        Fixture::Folder(source.path().to_path_buf())
            .materialize(workspace.path())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("d/b.txt")).unwrap(),
            "b"
        );
        let files = Fixture::Files(BTreeMap::from([("x/y.md".into(), "y".into())]));
        files.materialize(workspace.path()).unwrap();
        assert_eq!(read_in(workspace.path(), Path::new("x/y.md")).unwrap(), "y");
    }
}
