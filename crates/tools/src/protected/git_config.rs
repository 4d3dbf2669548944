//! The paths git runs or loads because its configuration names them: every hooks
//! directory `core.hooksPath` is set to, the files `include.path` and
//! `includeIf.*.path` pull in, and the programs command settings (`core.fsmonitor`,
//! `core.sshCommand`, filter drivers, `!` aliases …) name by a path.
//!
//! The configuration is read as git reads it, in git's order: the system file
//! (`/etc/gitconfig`, unless `GIT_CONFIG_NOSYSTEM`; `GIT_CONFIG_SYSTEM` replaces it), the
//! global files (`$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`; `GIT_CONFIG_GLOBAL`
//! replaces them), the repository's `config` (a work tree whose `.git` is a `gitdir:`
//! file is followed to its common directory) and its `config.worktree`; each include is
//! followed where it appears, up to git's depth of 10. To be safe rather than exact,
//! every `includeIf` is followed whatever its condition and every `core.hooksPath` value
//! read is protected, not only the last one git would use. The locations come in a
//! [`GitConfigLocations`], so a test can name them without changing the process's
//! environment.
//!
//! A relative `core.hooksPath` or command is resolved against the top of the work tree,
//! where git runs them; a relative include against the directory of the file that names
//! it; `~/` against the home directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How deep includes are followed (git's `MAX_INCLUDE_DEPTH`).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The most bytes read of one configuration file.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The system configuration files git may be built to read (`$(prefix)/etc/gitconfig`
/// for the usual prefixes).
const SYSTEM_FILES: [&str; 2] = ["/etc/gitconfig", "/usr/local/etc/gitconfig"];

/// Where git reads its configuration besides the repository's own files, and the home
/// directory `~/` stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitConfigLocations {
    /// The system files, read first.
    pub system: Vec<PathBuf>,
    /// The global (per-user) files, read next.
    pub global: Vec<PathBuf>,
    /// The home directory, for `~/` in paths.
    pub home: Option<PathBuf>,
}

impl GitConfigLocations {
    /// The locations git uses with this process's environment (`HOME`,
    /// `XDG_CONFIG_HOME`, `GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_SYSTEM`,
    /// `GIT_CONFIG_GLOBAL`).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// The locations git uses with the environment `var` gives (a variable's value, or
    /// `None` when it is unset).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let home = var("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        let no_system = var("GIT_CONFIG_NOSYSTEM").is_some_and(|value| {
            let value = value.to_string_lossy().to_ascii_lowercase();
            ["1", "true", "yes", "on"].contains(&value.as_str())
        });
        let system = if no_system {
            Vec::new()
        } else if let Some(file) = var("GIT_CONFIG_SYSTEM") {
            vec![PathBuf::from(file)]
        } else {
            SYSTEM_FILES.iter().map(PathBuf::from).collect()
        };
        let global = if let Some(file) = var("GIT_CONFIG_GLOBAL") {
            vec![PathBuf::from(file)]
        } else {
            let xdg = var("XDG_CONFIG_HOME")
                .filter(|xdg| !xdg.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|home| home.join(".config")));
            xdg.map(|xdg| xdg.join("git").join("config"))
                .into_iter()
                .chain(home.as_ref().map(|home| home.join(".gitconfig")))
                .collect()
        };
        Self {
            system,
            global,
            home,
        }
    }
}

/// Why git's configuration names a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reason {
    /// It is a hooks directory (`core.hooksPath`).
    Hooks,
    /// It is an included configuration file.
    Include,
    /// It is the program a command setting runs (`section.key`, lower-case).
    Command(String),
}

/// A path git's configuration names, and why it is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    /// The path, absolute (not canonicalised).
    pub(super) path: PathBuf,
    /// Why.
    pub(super) reason: Reason,
}

impl Named {
    /// Whether everything beneath the path is covered too.
    pub(super) fn beneath(&self) -> bool {
        self.reason == Reason::Hooks
    }

    /// What the path is, completing "`path` is …".
    pub(super) fn what(&self) -> String {
        match &self.reason {
            Reason::Hooks => {
                "in git's hooks directory (`core.hooksPath`), whose hooks git runs".to_owned()
            }
            Reason::Include => "a file git's configuration includes, loaded by git".to_owned(),
            Reason::Command(key) => {
                format!("the program git's configuration runs as `{key}`")
            }
        }
    }
}

/// What git's configuration for a work tree containing `root` names (see the module
/// docs), reading the files at `locations` and the repository's own.
pub(super) fn named_paths(root: &Path, locations: &GitConfigLocations) -> Vec<Named> {
    let top = work_tree_top(root);
    let mut reader = Reader {
        home: locations.home.as_deref(),
        base: top.clone().unwrap_or_else(|| root.to_path_buf()),
        named: Vec::new(),
    };
    for file in locations.system.iter().chain(&locations.global) {
        reader.read(file, 0);
    }
    if let Some(top) = top.as_deref() {
        for file in repository_configs(top) {
            reader.read(&file, 0);
        }
    }
    reader.named
}

/// Reads configuration files and collects what they name.
struct Reader<'a> {
    home: Option<&'a Path>,
    /// What relative hooks directories and commands are resolved against.
    base: PathBuf,
    named: Vec<Named>,
}

impl Reader<'_> {
    fn read(&mut self, file: &Path, depth: usize) {
        let Some(text) = read_limited(file) else {
            return;
        };
        let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        for (section, key, value) in entries(&text) {
            if section == "core" && key == "hookspath" {
                let path = self.expand(&value, &self.base.clone());
                self.push(path, Reason::Hooks);
            } else if (section == "include" || section == "includeif") && key == "path" {
                let path = self.expand(&value, &dir);
                self.push(path.clone(), Reason::Include);
                if depth < MAX_INCLUDE_DEPTH {
                    self.read(&path, depth + 1);
                }
            } else if let Some(program) = command_program(&section, &key, &value) {
                let path = self.expand(&program, &self.base.clone());
                self.push(path, Reason::Command(format!("{section}.{key}")));
            }
        }
    }

    fn push(&mut self, path: PathBuf, reason: Reason) {
        let named = Named { path, reason };
        if !self.named.contains(&named) {
            self.named.push(named);
        }
    }

    /// `value` as a path: `~/` is the home directory, a relative path is under `base`.
    fn expand(&self, value: &str, base: &Path) -> PathBuf {
        if let Some(home) = self.home {
            if value == "~" {
                return home.to_path_buf();
            }
            if let Some(rest) = value.strip_prefix("~/") {
                return home.join(rest);
            }
        }
        let path = Path::new(value);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            base.join(path)
        }
    }
}

/// The file's text, when it exists and is no larger than [`MAX_CONFIG_BYTES`].
fn read_limited(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    std::fs::read(file)
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// When `section.key = value` runs a command whose program is named by a path (its
/// first word holds a `/`): that path.
fn command_program(section: &str, key: &str, value: &str) -> Option<String> {
    let runs = match section {
        "core" => matches!(
            key,
            "fsmonitor" | "sshcommand" | "editor" | "pager" | "askpass" | "gitproxy"
        ),
        "sequence" => key == "editor",
        "diff" => matches!(key, "external" | "textconv" | "command"),
        "merge" => key == "driver",
        "filter" => matches!(key, "clean" | "smudge" | "process"),
        "gpg" => key == "program",
        "credential" => key == "helper",
        "alias" => value.trim_start().starts_with('!'),
        "pager" => true,
        _ => false,
    };
    if !runs {
        return None;
    }
    let command = value.trim_start().trim_start_matches('!').trim_start();
    let first = command.split_whitespace().next()?;
    let first = first.trim_matches(['"', '\'']);
    first.contains('/').then(|| first.to_owned())
}

/// The top of the git work tree `root` is in: the nearest directory at or above it
/// holding a `.git` (a directory, or a file as in a linked work tree or a submodule;
/// not followed). What protected paths, the project `oxydra.toml` and the project
/// instructions take as the repository root.
pub fn work_tree_top(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The configuration files of the repository whose work tree is `top`, in the order git
/// reads them: `.git/config` and `.git/config.worktree`, or for a linked work tree
/// (`.git` a file saying `gitdir: …`) the common directory's `config` and the work
/// tree's own `config.worktree`.
fn repository_configs(top: &Path) -> Vec<PathBuf> {
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        return vec![dot_git.join("config"), dot_git.join("config.worktree")];
    }
    let Some(pointer) = read_limited(&dot_git) else {
        return Vec::new();
    };
    let Some(gitdir) = pointer
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("gitdir:"))
        .map(|gitdir| top.join(gitdir.trim()))
    else {
        return Vec::new();
    };
    let common = read_limited(&gitdir.join("commondir"))
        .map(|common| gitdir.join(common.trim()))
        .unwrap_or_else(|| gitdir.clone());
    vec![common.join("config"), gitdir.join("config.worktree")]
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
            // `[section.sub]`, the old form of `[section "sub"]`.
            let name = name.split('.').next().unwrap_or_default();
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

    fn hooks(path: PathBuf) -> Named {
        Named {
            path,
            reason: Reason::Hooks,
        }
    }

    fn include(path: PathBuf) -> Named {
        Named {
            path,
            reason: Reason::Include,
        }
    }

    /// No system file, no global file, no home.
    fn nowhere() -> GitConfigLocations {
        GitConfigLocations::default()
    }

    #[test]
    fn entries_are_read_as_git_reads_them() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tHooksPath = \".githooks\" # mine\n\
                    [include]\n  path = ~/shared.inc\n[includeIf \"gitdir:~/w/\"]\npath=w.inc\n\
                    [remote \"origin\"]\n\turl = x\n[core] bare\n[Core.sub]\nx = 1\n";
        let found = entries(text);
        assert!(found.contains(&("core".into(), "hookspath".into(), ".githooks".into())));
        assert!(found.contains(&("include".into(), "path".into(), "~/shared.inc".into())));
        assert!(found.contains(&("includeif".into(), "path".into(), "w.inc".into())));
        assert!(found.contains(&("core".into(), "bare".into(), "true".into())));
        assert!(found.contains(&("core".into(), "x".into(), "1".into())));
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
        let named = named_paths(&top.join("sub"), &nowhere());
        assert!(named.contains(&hooks(top.join(".githooks"))));
        assert!(named.contains(&include(top.join(".git/../extra.inc"))));
    }

    #[test]
    fn a_linked_work_tree_reads_its_common_config_and_its_own_worktree_config() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(main.join(".git/worktrees/linked")).unwrap();
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(main.join(".git/config"), "[core]\nhooksPath = /abs/hooks\n").unwrap();
        std::fs::write(
            main.join(".git/worktrees/linked/config.worktree"),
            "[core]\nhooksPath = /per/worktree\n",
        )
        .unwrap();
        std::fs::write(main.join(".git/worktrees/linked/commondir"), "../..\n").unwrap();
        std::fs::write(
            linked.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/linked").display()),
        )
        .unwrap();
        let named = named_paths(&linked, &nowhere());
        assert!(named.contains(&hooks(PathBuf::from("/abs/hooks"))));
        assert!(named.contains(&hooks(PathBuf::from("/per/worktree"))));
    }

    #[test]
    fn includes_are_followed_from_the_global_files_and_to_a_depth() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/one.inc\n",
        )
        .unwrap();
        // Each file includes the next; the 12th sets a hooks path git never reaches.
        for n in 1..12 {
            let hooks = if n == 2 {
                "[core]\nhooksPath = .githooks\n"
            } else {
                ""
            };
            std::fs::write(
                home.join(format!("{}.inc", words(n))),
                format!("{hooks}[include]\npath = {}.inc\n", words(n + 1)),
            )
            .unwrap();
        }
        std::fs::write(home.join("twelve.inc"), "[core]\nhooksPath = /too/deep\n").unwrap();
        std::fs::write(
            home.join(".config/git/config"),
            "[core]\n\tfsmonitor = ./tools/fsmon.sh\n[alias]\n\tst = !scripts/st.sh -s\n",
        )
        .unwrap();
        let locations = GitConfigLocations::from_vars(|name| match name {
            "HOME" => Some(home.clone().into_os_string()),
            "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
            _ => None,
        });
        assert!(locations.system.is_empty());
        assert_eq!(
            locations.global,
            vec![home.join(".config/git/config"), home.join(".gitconfig")]
        );
        let named = named_paths(&ws, &locations);
        assert!(named.contains(&hooks(ws.join(".githooks"))), "{named:?}");
        assert!(named.contains(&include(home.join("one.inc"))));
        assert!(
            !named.contains(&hooks(PathBuf::from("/too/deep"))),
            "{named:?}"
        );
        assert!(named.contains(&Named {
            path: ws.join("./tools/fsmon.sh"),
            reason: Reason::Command("core.fsmonitor".into()),
        }));
        assert!(named.contains(&Named {
            path: ws.join("scripts/st.sh"),
            reason: Reason::Command("alias.st".into()),
        }));
    }

    fn words(n: usize) -> &'static str {
        [
            "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve",
        ][n]
    }

    #[test]
    fn the_environment_chooses_the_files_as_git_does() {
        let locations = GitConfigLocations::from_vars(|name| match name {
            "HOME" => Some("/h".into()),
            "XDG_CONFIG_HOME" => Some("/x".into()),
            "GIT_CONFIG_SYSTEM" => Some("/s/gitconfig".into()),
            _ => None,
        });
        assert_eq!(locations.system, vec![PathBuf::from("/s/gitconfig")]);
        assert_eq!(
            locations.global,
            vec![
                PathBuf::from("/x/git/config"),
                PathBuf::from("/h/.gitconfig")
            ]
        );
        let locations = GitConfigLocations::from_vars(|name| match name {
            "GIT_CONFIG_GLOBAL" => Some("/g".into()),
            _ => None,
        });
        assert_eq!(locations.global, vec![PathBuf::from("/g")]);
        assert_eq!(locations.system.len(), SYSTEM_FILES.len());
    }

    #[test]
    fn only_commands_named_by_a_path_are_programs() {
        assert_eq!(
            command_program("core", "fsmonitor", "./x.sh"),
            Some("./x.sh".into())
        );
        assert_eq!(command_program("core", "fsmonitor", "true"), None);
        assert_eq!(command_program("core", "pager", "less -R"), None);
        assert_eq!(
            command_program("filter", "smudge", "\"/opt/f\" %f"),
            Some("/opt/f".into())
        );
        assert_eq!(command_program("alias", "co", "checkout"), None);
        assert_eq!(command_program("user", "name", "a/b"), None);
    }
}
