//! The modules Python's `site` module runs at every interpreter start because a `.pth`
//! file names them: a line of a `.pth` file in a site directory that starts with
//! `import` is executed (<https://docs.python.org/3/library/site.html>), and such lines
//! import modules beside it (`_virtualenv.pth` runs `import _virtualenv`, an editable
//! install's `.pth` imports its `__editable___…_finder`, `distutils-precedence.pth`
//! imports `_distutils_hack`). The `.pth` files themselves are in the table (`rules`);
//! this finds the modules they import, by reading the `.pth` files in the site
//! directory at each call.
//!
//! To be safe rather than exact, every identifier on an `import` line counts as a
//! module name, and a path is covered when the first name beneath the site directory
//! (or beneath its `__pycache__`) has that name before its first `.`.

use std::collections::BTreeSet;
use std::path::{Component, Path};

/// The names of the directories Python's `site` module reads `.pth` files from.
const SITE_DIRECTORIES: [&str; 2] = ["site-packages", "dist-packages"];

/// The most `.pth` files read in one site directory.
const MAX_PTH_FILES: usize = 1_000;

/// The most bytes read of one `.pth` file.
const MAX_PTH_BYTES: u64 = 1 << 20;

/// What `path` (absolute) is when it is a module a `.pth` file beside it imports, if
/// it is.
pub(super) fn refusal(path: &Path) -> Option<String> {
    let components: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    // The innermost site directory on the path, and the names beneath it.
    let index = components
        .iter()
        .rposition(|name| is_site_name(&name.to_string_lossy()))?;
    let mut beneath = components.get(index + 1..)?.iter();
    let mut first = beneath.next()?.to_string_lossy().to_lowercase();
    if first == "__pycache__" {
        first = beneath.next()?.to_string_lossy().to_lowercase();
    }
    let module = module_of(&first);
    if module.is_empty() {
        return None;
    }
    // The innermost site directory, the same one `index` found.
    let site = path.ancestors().find(|dir| is_site_directory(dir))?;
    imported_by_pth(site).contains(module).then(|| {
        format!("the module `{module}`, which a `.pth` file beside it imports: Python runs it at every start")
    })
}

/// Whether `dir` is named like a site directory (`site-packages`, `dist-packages`).
pub(super) fn is_site_directory(dir: &Path) -> bool {
    dir.file_name()
        .is_some_and(|name| is_site_name(&name.to_string_lossy()))
}

fn is_site_name(name: &str) -> bool {
    SITE_DIRECTORIES.contains(&name.to_lowercase().as_str())
}

/// The module a name directly in a site directory holds: the name before its first
/// `.` (`_virtualenv.py`, `_virtualenv.cpython-311.pyc`, a package `_distutils_hack`).
pub(super) fn module_of(name: &str) -> &str {
    name.split('.').next().unwrap_or_default()
}

/// The identifiers, lower-case, on the `import` lines of the `.pth` files in `site`.
pub(super) fn imported_by_pth(site: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(site) else {
        return names;
    };
    let pth_files = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("pth"))
        })
        .take(MAX_PTH_FILES);
    for file in pth_files {
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        if !meta.is_file() || meta.len() > MAX_PTH_BYTES {
            continue;
        }
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            if line.starts_with("import ") || line.starts_with("import\t") {
                names.extend(identifiers(line));
            }
        }
    }
    names
}

/// The identifiers (`[A-Za-z_][A-Za-z0-9_]*`) in `line`, lower-case, including those
/// inside strings (`__import__('_distutils_hack')`).
fn identifiers(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.chars().next().is_some_and(|c| !c.is_ascii_digit()))
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_a_pth_file_imports_is_covered_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join(".venv/lib/python3.11/site-packages");
        std::fs::create_dir_all(site.join("_distutils_hack")).unwrap();
        std::fs::write(site.join("_virtualenv.pth"), "import _virtualenv\n").unwrap();
        std::fs::write(
            site.join("distutils-precedence.pth"),
            "import os; var = 'X'; enabled and __import__('_distutils_hack').add_shim();\n",
        )
        .unwrap();
        std::fs::write(site.join("paths.pth"), "/src/project\n# import nothing\n").unwrap();
        for path in [
            "_virtualenv.py",
            "__pycache__/_virtualenv.cpython-311.pyc",
            "_distutils_hack/__init__.py",
            "_Virtualenv.py",
        ] {
            assert!(refusal(&site.join(path)).is_some(), "{path}");
        }
        for path in ["requests/__init__.py", "project", "nothing.py", "src.py"] {
            assert!(refusal(&site.join(path)).is_none(), "{path}");
        }
        assert!(refusal(&dir.path().join("_virtualenv.py")).is_none());
    }
}
