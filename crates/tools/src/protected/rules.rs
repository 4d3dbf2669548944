//! The table of files other programs load by themselves, built from one rule: **a file
//! another program executes, or loads as configuration that names commands, without the
//! user choosing to run that file** (opening a folder in an editor, entering a directory,
//! starting any Python, running git or a package manager for something else). A
//! `Makefile` or a `package.json` script is not in it: the user chooses to run it by
//! typing `make` or `npm test`.
//!
//! Each pattern is recognised by name wherever it lies, compared without regard to
//! letter case: `.cargo/config.toml` matches in any directory. docs/security.md ("Files
//! other programs load by themselves") shows the same table; a test keeps them equal.

/// One kind of path another program runs or loads on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rule {
    /// Names, lower-case, separated by `/`, that must follow one another in the path.
    /// A trailing `/` makes it a directory (everything beneath is covered too); a name
    /// `*.ext` matches any name ending in `.ext`; a name `stem.*` matches any name
    /// starting with `stem.`.
    pub(super) pattern: &'static str,
    /// The program that loads it.
    pub(super) program: &'static str,
    /// What the path is and how that program runs or loads it, completing "`path` is …".
    pub(super) what: &'static str,
    /// Where the program's documentation (or source) says it loads the file.
    pub(super) source: &'static str,
}

const fn rule(
    pattern: &'static str,
    program: &'static str,
    what: &'static str,
    source: &'static str,
) -> Rule {
    Rule {
        pattern,
        program,
        what,
        source,
    }
}

const GIT_CONFIG: &str = "https://git-scm.com/docs/git-config#FILES";
const SHELL: &str = "a shell start-up file, run by the shell when it starts";
const BASH: &str = "https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html";
const ZSH: &str = "https://zsh.sourceforge.io/Doc/Release/Files.html";
const KSH: &str = "https://man.openbsd.org/ksh.1";
const CSH: &str = "https://man.openbsd.org/csh.1";
const PYTHON_SITE: &str = "https://docs.python.org/3/library/site.html";
const VIM_EXRC: &str = "https://vimhelp.org/options.txt.html#%27exrc%27";
const NVIM_EXRC: &str = "https://neovim.io/doc/user/options.html#'exrc'";
const MISE: &str = "https://mise.jdx.dev/configuration.html";

/// Every rule; docs/security.md lists the same patterns.
pub(super) const RULES: &[Rule] = &[
    rule(
        ".git/",
        "git",
        "in `.git`, which git loads and runs (its config can set `core.fsmonitor`, its hooks run on commit)",
        "https://git-scm.com/docs/gitrepository-layout",
    ),
    rule(
        ".githooks/",
        "git",
        "in `.githooks`, the usual hooks directory `core.hooksPath` names, whose hooks git runs",
        "https://git-scm.com/docs/git-config#Documentation/git-config.txt-corehooksPath",
    ),
    rule(
        ".gitconfig",
        "git",
        "a git configuration, loaded by git (`core.fsmonitor`, aliases and filters run commands)",
        GIT_CONFIG,
    ),
    rule(
        ".config/git/",
        "git",
        "in git's configuration directory, loaded by git (`core.fsmonitor`, aliases and filters run commands)",
        GIT_CONFIG,
    ),
    rule(
        ".husky/",
        "husky",
        "in `.husky`, whose hooks git runs through husky",
        "https://typicode.github.io/husky/how-to.html",
    ),
    rule(
        ".pre-commit-config.yaml",
        "pre-commit",
        "the pre-commit configuration, whose commands a git hook runs",
        "https://pre-commit.com/#plugins",
    ),
    rule(
        ".hg/",
        "Mercurial",
        "in `.hg`, loaded by Mercurial (hooks in `.hg/hgrc` run on hg commands)",
        "https://www.mercurial-scm.org/doc/hgrc.5.html#hooks",
    ),
    rule(
        ".hgrc",
        "Mercurial",
        "a Mercurial configuration, loaded by hg (its hooks run commands)",
        "https://www.mercurial-scm.org/doc/hgrc.5.html#files",
    ),
    rule(
        ".jj/",
        "jj",
        "in `.jj`, loaded by Jujutsu (its repository config names commands: `ui.pager`, `fix.tools`)",
        "https://jj-vcs.github.io/jj/latest/config/",
    ),
    rule(
        ".cargo/config",
        "cargo",
        "a cargo configuration, loaded by cargo (a `runner` or build setting runs a command)",
        "https://doc.rust-lang.org/cargo/reference/config.html",
    ),
    rule(
        ".cargo/config.toml",
        "cargo",
        "a cargo configuration, loaded by cargo (a `runner` or build setting runs a command)",
        "https://doc.rust-lang.org/cargo/reference/config.html",
    ),
    rule(
        "rust-toolchain",
        "rustup",
        "a rustup toolchain file, loaded by every cargo and rustc (its `path` names the programs they run)",
        "https://rust-lang.github.io/rustup/overrides.html#the-toolchain-file",
    ),
    rule(
        "rust-toolchain.toml",
        "rustup",
        "a rustup toolchain file, loaded by every cargo and rustc (its `path` names the programs they run)",
        "https://rust-lang.github.io/rustup/overrides.html#the-toolchain-file",
    ),
    rule(
        ".envrc",
        "direnv",
        "a direnv file, run by direnv when a shell enters its directory",
        "https://direnv.net/#how-it-works",
    ),
    rule(
        ".direnv/",
        "direnv",
        "in `.direnv`, direnv's layouts and caches, which `.envrc` sources or puts on `PATH`",
        "https://github.com/nix-community/nix-direnv#how-it-works",
    ),
    rule(
        "mise.*",
        "mise",
        "a mise configuration, loaded when a shell enters its directory (its `[hooks]` and `[env] _.source` run commands)",
        MISE,
    ),
    rule(
        ".mise.*",
        "mise",
        "a mise configuration, loaded when a shell enters its directory (its `[hooks]` and `[env] _.source` run commands)",
        MISE,
    ),
    rule(
        ".mise/",
        "mise",
        "in `.mise`, mise's configuration, loaded when a shell enters its directory",
        MISE,
    ),
    rule(
        "mise/config.toml",
        "mise",
        "a mise configuration, loaded when a shell enters its directory",
        MISE,
    ),
    rule(
        ".config/mise/",
        "mise",
        "in mise's configuration directory, loaded when a shell enters its directory",
        MISE,
    ),
    rule(
        ".config/mise.toml",
        "mise",
        "a mise configuration, loaded when a shell enters its directory",
        MISE,
    ),
    rule(
        ".tool-versions",
        "asdf and mise",
        "a tool-versions file, loaded by asdf and mise (a `path:` version puts a directory's programs first on `PATH`)",
        "https://asdf-vm.com/manage/configuration.html#tool-versions",
    ),
    rule(
        "site-packages/*.pth",
        "Python",
        "a `.pth` file in a site directory, whose `import` lines Python runs at every start",
        PYTHON_SITE,
    ),
    rule(
        "dist-packages/*.pth",
        "Python",
        "a `.pth` file in a site directory, whose `import` lines Python runs at every start",
        PYTHON_SITE,
    ),
    rule(
        "sitecustomize.*",
        "Python",
        "`sitecustomize`, which Python imports at every start",
        PYTHON_SITE,
    ),
    rule(
        "sitecustomize/",
        "Python",
        "`sitecustomize`, which Python imports at every start",
        PYTHON_SITE,
    ),
    rule(
        "usercustomize.*",
        "Python",
        "`usercustomize`, which Python imports at every start",
        PYTHON_SITE,
    ),
    rule(
        "usercustomize/",
        "Python",
        "`usercustomize`, which Python imports at every start",
        PYTHON_SITE,
    ),
    rule(
        ".pdbrc",
        "pdb",
        "a pdb start-up file, whose lines pdb runs when it starts",
        "https://docs.python.org/3/library/pdb.html#debugger-commands",
    ),
    rule(
        ".npmrc",
        "npm",
        "an npm configuration, loaded by npm and pnpm (`script-shell`, `node-options`, `git` name programs)",
        "https://docs.npmjs.com/cli/v10/using-npm/config#script-shell",
    ),
    rule(
        ".yarnrc",
        "yarn",
        "a yarn configuration, loaded by yarn (`yarn-path` names the script every yarn command runs)",
        "https://classic.yarnpkg.com/en/docs/yarnrc",
    ),
    rule(
        ".yarnrc.yml",
        "yarn",
        "a yarn configuration, loaded by yarn (`yarnPath` names the script every yarn command runs)",
        "https://yarnpkg.com/configuration/yarnrc#yarnPath",
    ),
    rule(
        ".pnpmfile.cjs",
        "pnpm",
        "a pnpmfile, whose hooks pnpm runs on every install",
        "https://pnpm.io/pnpmfile",
    ),
    rule(
        "bunfig.toml",
        "bun",
        "a bun configuration, loaded by bun (its `preload` scripts run before every `bun run` and test)",
        "https://bun.sh/docs/runtime/bunfig#preload",
    ),
    rule(
        ".bazelrc",
        "Bazel",
        "a Bazel configuration, loaded by every bazel command (`--workspace_status_command`, `--run_under` run commands)",
        "https://bazel.build/run/bazelrc",
    ),
    rule(
        ".vscode/",
        "VS Code",
        "in `.vscode`, loaded by VS Code (its tasks, launch and settings run commands)",
        "https://code.visualstudio.com/docs/editor/tasks#_run-behavior",
    ),
    rule(
        ".idea/",
        "JetBrains IDEs",
        "in `.idea`, loaded by JetBrains IDEs (its run configurations run commands)",
        "https://www.jetbrains.com/help/idea/settings-tools-startup-tasks.html",
    ),
    rule(
        ".devcontainer/",
        "the dev container CLI",
        "in `.devcontainer`, run by VS Code and the dev container CLI",
        "https://containers.dev/implementors/json_reference/#lifecycle-scripts",
    ),
    rule(
        ".devcontainer.json",
        "the dev container CLI",
        "a dev container configuration, run by VS Code and the dev container CLI",
        "https://containers.dev/implementors/spec/#devcontainerjson",
    ),
    rule(
        ".claude/",
        "Claude Code",
        "in `.claude`, loaded by Claude Code (its settings' hooks and MCP servers run commands)",
        "https://docs.anthropic.com/en/docs/claude-code/hooks",
    ),
    rule(
        ".mcp.json",
        "Claude Code",
        "a project MCP configuration, whose server commands Claude Code and other agents start",
        "https://docs.anthropic.com/en/docs/claude-code/mcp#project-scope",
    ),
    rule(
        ".cursor/",
        "Cursor",
        "in `.cursor`, loaded by Cursor (`mcp.json` server commands, hooks)",
        "https://docs.cursor.com/context/model-context-protocol",
    ),
    rule(
        ".zed/",
        "Zed",
        "in `.zed`, loaded by Zed (its settings name language servers, its tasks run commands)",
        "https://zed.dev/docs/configuring-zed#settings-files",
    ),
    rule(
        ".helix/",
        "Helix",
        "in `.helix`, loaded by Helix (`languages.toml` names language servers and formatters)",
        "https://docs.helix-editor.com/languages.html",
    ),
    rule(
        ".nvim.lua",
        "Neovim",
        "a Neovim project file, run by Neovim at start when `exrc` is set",
        NVIM_EXRC,
    ),
    rule(
        ".nvimrc",
        "Neovim",
        "a Neovim project file, run by Neovim at start when `exrc` is set",
        NVIM_EXRC,
    ),
    rule(
        ".exrc",
        "Vim and Neovim",
        "a vi start-up file, run by Vim and Neovim at start when `exrc` is set",
        VIM_EXRC,
    ),
    rule(
        "_exrc",
        "Vim",
        "a vi start-up file, run by Vim at start when `exrc` is set",
        VIM_EXRC,
    ),
    rule(
        ".vimrc",
        "Vim",
        "a Vim start-up file, run by Vim at start (the home folder's, or any with `exrc`)",
        VIM_EXRC,
    ),
    rule(
        "_vimrc",
        "Vim",
        "a Vim start-up file, run by Vim at start (the home folder's, or any with `exrc`)",
        VIM_EXRC,
    ),
    rule(
        ".gvimrc",
        "Vim",
        "a gVim start-up file, run by gVim at start (the home folder's, or any with `exrc`)",
        VIM_EXRC,
    ),
    rule(
        "_gvimrc",
        "Vim",
        "a gVim start-up file, run by gVim at start (the home folder's, or any with `exrc`)",
        VIM_EXRC,
    ),
    rule(
        ".vim/",
        "Vim",
        "in `.vim`, whose plugins Vim runs at start (the workspace is the home folder)",
        "https://vimhelp.org/starting.txt.html#load-plugins",
    ),
    rule(
        ".config/nvim/",
        "Neovim",
        "in Neovim's configuration directory, run by Neovim at start",
        "https://neovim.io/doc/user/starting.html#config",
    ),
    rule(
        ".gdbinit",
        "gdb",
        "a gdb start-up file, run by gdb at start (the home folder's, or any the auto-load safe path allows)",
        "https://sourceware.org/gdb/current/onlinedocs/gdb.html/Startup.html",
    ),
    rule(
        ".lldbinit",
        "lldb",
        "an lldb start-up file, run by lldb at start (the home folder's, or the current directory's when allowed)",
        "https://lldb.llvm.org/man/lldb.html#configuration-files",
    ),
    rule(
        ".ssh/",
        "ssh",
        "in `.ssh`, loaded by ssh (`ProxyCommand` runs a command, `authorized_keys` grants logins)",
        "https://man.openbsd.org/ssh_config#ProxyCommand",
    ),
    rule(
        ".config/fish/",
        "fish",
        "in fish's configuration, run by the fish shell when it starts",
        "https://fishshell.com/docs/current/language.html#configuration-files",
    ),
    rule(
        ".config/autostart/",
        "the desktop session",
        "in `.config/autostart`, run by the desktop session at login",
        "https://specifications.freedesktop.org/autostart-spec/latest/",
    ),
    rule(
        ".config/systemd/",
        "systemd",
        "in `.config/systemd`, run by systemd's user manager",
        "https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html",
    ),
    rule(".bashrc", "bash", SHELL, BASH),
    rule(".bash_profile", "bash", SHELL, BASH),
    rule(".bash_login", "bash", SHELL, BASH),
    rule(".bash_logout", "bash", SHELL, BASH),
    rule(".profile", "sh and bash", SHELL, BASH),
    rule(".zshrc", "zsh", SHELL, ZSH),
    rule(".zprofile", "zsh", SHELL, ZSH),
    rule(".zshenv", "zsh", SHELL, ZSH),
    rule(".zlogin", "zsh", SHELL, ZSH),
    rule(".zlogout", "zsh", SHELL, ZSH),
    rule(".kshrc", "ksh", SHELL, KSH),
    rule(
        ".mkshrc",
        "mksh",
        SHELL,
        "http://www.mirbsd.org/htman/i386/man1/mksh.htm",
    ),
    rule(".cshrc", "csh", SHELL, CSH),
    rule(
        ".tcshrc",
        "tcsh",
        SHELL,
        "https://www.mankier.com/1/tcsh#Startup_and_shutdown",
    ),
    rule(".login", "csh", SHELL, CSH),
    rule(".logout", "csh", SHELL, CSH),
];

impl Rule {
    /// The names of the pattern, without the trailing `/`.
    pub(super) fn names(&self) -> impl Iterator<Item = &'static str> + Clone {
        self.pattern.trim_end_matches('/').split('/')
    }

    /// Whether everything beneath the pattern is covered too (a directory).
    pub(super) fn beneath(&self) -> bool {
        self.pattern.ends_with('/')
    }

    /// Whether every name is exact (no `*`): only such a pattern can be joined to a
    /// directory to look for a symlink by that name.
    pub(super) fn is_exact(&self) -> bool {
        !self.pattern.contains('*')
    }

    /// Whether `components` (lower-case names of a path) fall under this rule.
    fn matches(&self, components: &[String]) -> bool {
        let len = self.names().count();
        (0..components.len()).any(|start| {
            let Some(window) = components.get(start..start + len) else {
                return false;
            };
            let same = window
                .iter()
                .zip(self.names())
                .all(|(have, want)| name_matches(want, have));
            same && (self.beneath() || start + len == components.len())
        })
    }
}

/// Whether the lower-case `name` matches one name of a pattern (see [`Rule::pattern`]).
pub(super) fn name_matches(pattern: &str, name: &str) -> bool {
    if let Some(suffix) = pattern.strip_prefix('*') {
        return name.len() > suffix.len() && name.ends_with(suffix);
    }
    if let Some(stem) = pattern.strip_suffix(".*") {
        return name
            .strip_prefix(stem)
            .is_some_and(|rest| rest.starts_with('.'));
    }
    name == pattern
}

/// The first rule `components` (lower-case names of an absolute path) falls under.
pub(super) fn matching(components: &[String]) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.matches(components))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &str) -> Vec<String> {
        path.split('/')
            .filter(|name| !name.is_empty())
            .map(str::to_lowercase)
            .collect()
    }

    fn what(path: &str) -> Option<&'static str> {
        matching(&names(path)).map(|rule| rule.what)
    }

    #[test]
    fn directories_cover_everything_beneath_and_files_only_themselves() {
        for path in [
            "/ws/.git",
            "/ws/.git/config",
            "/ws/sub/.git/hooks/pre-commit",
            "/ws/.cargo/config.toml",
            "/ws/a/.cargo/config",
            "/ws/.envrc",
            "/ws/.vscode/tasks.json",
            "/ws/.idea/workspace.xml",
            "/ws/.devcontainer/devcontainer.json",
            "/ws/.devcontainer.json",
            "/ws/.husky/pre-commit",
            "/home/u/.bashrc",
            "/home/u/.zshenv",
            "/home/u/.config/fish/config.fish",
            "/home/u/.config/git/config",
            "/home/u/.ssh/config",
            "/home/u/.gitconfig",
            "/ws/.venv/lib/python3.11/site-packages/zz.pth",
            "/usr/lib/python3/dist-packages/x.pth",
            "/ws/src/sitecustomize.py",
            "/ws/src/__pycache__/sitecustomize.cpython-311.pyc",
            "/ws/src/usercustomize/__init__.py",
            "/ws/mise.toml",
            "/ws/mise.local.toml",
            "/ws/.mise.toml",
        ] {
            assert!(what(path).is_some(), "{path}");
        }
        for path in [
            "/ws/.cargo/registry/x.rs",
            "/ws/.envrc.example",
            "/ws/my.git/config",
            "/ws/.gitignore",
            "/ws/src/profile",
            "/ws/.bashrc/notes",
            "/ws/config/git",
            "/ws/models/resnet.pth",
            "/ws/.venv/lib/python3.11/site-packages/pkg/data.pth",
            "/ws/.venv/lib/python3.11/site-packages/.pth",
            "/ws/src/sitecustomizer.py",
            "/ws/src/premise.toml",
            "/ws/mise",
        ] {
            assert!(what(path).is_none(), "{path}");
        }
    }

    #[test]
    fn names_match_exactly_by_suffix_or_by_stem() {
        assert!(name_matches("*.pth", "zz.pth"));
        assert!(!name_matches("*.pth", ".pth"));
        assert!(!name_matches("*.pth", "zz.pthx"));
        assert!(!name_matches("mise.*", "mise"));
        assert!(name_matches("mise.*", "mise.dev.toml"));
        assert!(!name_matches("mise.*", "misery.toml"));
        assert!(name_matches(".envrc", ".envrc"));
        assert!(!name_matches(".envrc", ".envrc2"));
    }

    #[test]
    fn every_rule_names_a_program_and_a_source() {
        for rule in RULES {
            assert!(!rule.program.is_empty(), "{}", rule.pattern);
            assert!(rule.source.starts_with("http"), "{}", rule.pattern);
            assert_eq!(
                rule.pattern,
                rule.pattern.to_lowercase(),
                "{}",
                rule.pattern
            );
            assert!(
                rule.names().all(|name| !name.is_empty()),
                "{}",
                rule.pattern
            );
        }
    }

    #[test]
    fn the_reason_names_the_program() {
        assert!(what("/ws/.git/hooks/pre-commit").unwrap().contains("git"));
        assert!(what("/ws/.envrc").unwrap().contains("direnv"));
        assert!(what("/ws/.cargo/config.toml").unwrap().contains("cargo"));
    }
}
