//! The paths git runs or loads because its configuration names them: the hooks
//! directory `core.hooksPath` points at and the files `include.path` /
//! `includeIf.*.path` pull in. Read from the repository's `.git/config` (a work tree
//! whose `.git` is a `gitdir:` file is followed to its repository) and the user's global
//! files (`$XDG_CONFIG_HOME/git/config`, `~/.gitconfig`), as git reads them.
//!
//! A relative `core.hooksPath` is resolved against the top of the work tree, as git
//! runs hooks from there; a relative include against the directory of the file that
//! names it; `~/` against `$HOME`. Includes are not followed further: the repository's
//! config is itself protected, so only the user can add one.

use std::path::{Path, PathBuf};

/// A path git's configuration names, and why it is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    /// The path, absolute (not canonicalised).
    pub(super) path: PathBuf,
    /// Whether it is the hooks directory (else an included configuration file).
    pub(super) hooks: bool,
}

/// What `core.hooksPath` and the includes of the configuration git uses for a work tree
/// containing `root` name.
pub(super) fn named_paths(root: &Path) -> Vec<Named> {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(home.join(".gitconfig"));
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        files.push(xdg.join("git").join("config"));
    }
    let top = work_tree_top(root);
    if let Some(config) = top.as_deref().and_then(repository_config) {
        files.push(config);
    }
    let mut named = Vec::new();
    let mut hooks: Option<PathBuf> = None;
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let dir = file.parent().unwrap_or(Path::new("/"));
        for (section, key, value) in entries(&text) {
            if section == "core" && key == "hookspath" {
                // The last one read wins, as in git: the repository's over the user's.
                hooks = Some(expand(&value, top.as_deref().unwrap_or(root)));
            } else if (section == "include" || section.starts_with("includeif")) && key == "path" {
                named.push(Named {
                    path: expand(&value, dir),
                    hooks: false,
                });
            }
        }
    }
    if let Some(path) = hooks {
        named.push(Named { path, hooks: true });
    }
    named
}

/// The nearest directory at or above `root` holding a `.git`.
fn work_tree_top(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The config file of the repository whose work tree is `top`: `.git/config`, or for a
/// linked work tree (`.git` a file saying `gitdir: …`) the common directory's.
fn repository_config(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git.join("config"));
    }
    let pointer = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = top.join(pointer.trim().strip_prefix("gitdir:")?.trim());
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .map(|common| gitdir.join(common.trim()))
        .unwrap_or(gitdir);
    Some(common.join("config"))
}

/// `value` as a path: `~/` is the home directory, a relative path is under `base`.
fn expand(value: &str, base: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    let path = Path::new(value);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The `(section, key, value)` entries of a git config file, section (without its
/// subsection) and key lower-cased, the value unquoted. Lines git would reject are
/// skipped.
fn entries(text: &str) -> Vec<(String, String, String)> {
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim_start().to_owned();
        // A value may go on over lines ending in a backslash.
        while line.ends_with('\\') && !line.ends_with("\\\\") {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next),
                None => break,
            }
        }
        let mut rest = line.as_str();
        if let Some(header) = rest.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                continue;
            };
            let inside = header.get(..end).unwrap_or_default();
            let name = inside.split([' ', '\t', '"']).next().unwrap_or_default();
            section = name.to_ascii_lowercase();
            // `[section] key = value` on one line.
            rest = header.get(end + 1..).unwrap_or_default().trim_start();
        }
        if rest.is_empty() || rest.starts_with(['#', ';']) {
            continue;
        }
        let (key, value) = match rest.split_once('=') {
            Some((key, value)) => (key.trim(), unquote(value)),
            None => (rest.trim(), "true".to_owned()),
        };
        entries.push((section.clone(), key.to_ascii_lowercase(), value));
    }
    entries
}

/// A git config value: quotes removed, `\"`, `\\`, `\n`, `\t` unescaped, a comment
/// outside quotes dropped, surrounding blanks trimmed.
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = value.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            other => out.push(other),
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_as_git_reads_them() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tHooksPath = \".githooks\" # mine\n\
                    [include]\n  path = ~/shared.inc\n[includeIf \"gitdir:~/w/\"]\npath=w.inc\n\
                    [remote \"origin\"]\n\turl = x\n[core] bare\n";
        let found = entries(text);
        assert!(found.contains(&("core".into(), "hookspath".into(), ".githooks".into())));
        assert!(found.contains(&("include".into(), "path".into(), "~/shared.inc".into())));
        assert!(found.contains(&("includeif".into(), "path".into(), "w.inc".into())));
        assert!(found.contains(&("core".into(), "bare".into(), "true".into())));
        assert_eq!(unquote(r#" "a \"b\" c" ; x"#), "a \"b\" c");
    }

    #[test]
    fn a_relative_hooks_path_is_under_the_work_tree_top() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::fs::write(
            top.join(".git/config"),
            "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../extra.inc\n",
        )
        .unwrap();
        let named = named_paths(&top.join("sub"));
        assert!(named.contains(&Named {
            path: top.join(".githooks"),
            hooks: true
        }));
        assert!(named.contains(&Named {
            path: top.join(".git/../extra.inc"),
            hooks: false
        }));
    }

    #[test]
    fn a_linked_work_tree_reads_its_common_repository_config() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(main.join(".git/worktrees/linked")).unwrap();
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(main.join(".git/config"), "[core]\nhooksPath = /abs/hooks\n").unwrap();
        std::fs::write(main.join(".git/worktrees/linked/commondir"), "../..\n").unwrap();
        std::fs::write(
            linked.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/linked").display()),
        )
        .unwrap();
        let named = named_paths(&linked);
        assert!(named.contains(&Named {
            path: PathBuf::from("/abs/hooks"),
            hooks: true
        }));
    }
}
