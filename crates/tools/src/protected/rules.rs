//! The paths other programs run or load by themselves, recognised by their names
//! wherever they lie: a component sequence such as `.cargo/config.toml` matches in any
//! directory, compared without regard to letter case.

/// One kind of path another program runs or loads on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rule {
    /// The names, lower-case, that must follow one another in the path.
    pub(super) names: &'static [&'static str],
    /// Whether everything beneath them is covered too (a directory), or only the path
    /// that ends with them (a file).
    pub(super) beneath: bool,
    /// What the path is and which program runs or loads it, completing "`path` is …".
    pub(super) what: &'static str,
}

const fn dir(names: &'static [&'static str], what: &'static str) -> Rule {
    Rule {
        names,
        beneath: true,
        what,
    }
}

const fn file(names: &'static [&'static str], what: &'static str) -> Rule {
    Rule {
        names,
        beneath: false,
        what,
    }
}

const SHELL: &str = "a shell start-up file, run by the shell when it starts";

/// Every rule; docs/security.md lists the same paths.
pub(super) const RULES: &[Rule] = &[
    dir(
        &[".git"],
        "in `.git`, which git loads and runs (its config can set `core.fsmonitor`, its hooks run on commit)",
    ),
    file(
        &[".cargo", "config"],
        "a cargo configuration, loaded by cargo (a `runner` or build setting runs a command)",
    ),
    file(
        &[".cargo", "config.toml"],
        "a cargo configuration, loaded by cargo (a `runner` or build setting runs a command)",
    ),
    file(
        &[".envrc"],
        "a direnv file, run by direnv when a shell enters its directory",
    ),
    dir(
        &[".vscode"],
        "in `.vscode`, loaded by VS Code (its tasks, launch and settings run commands)",
    ),
    dir(
        &[".idea"],
        "in `.idea`, loaded by JetBrains IDEs (its run configurations run commands)",
    ),
    dir(
        &[".devcontainer"],
        "in `.devcontainer`, run by VS Code and the dev container CLI",
    ),
    file(
        &[".devcontainer.json"],
        "a dev container configuration, run by VS Code and the dev container CLI",
    ),
    dir(
        &[".husky"],
        "in `.husky`, whose hooks git runs through husky",
    ),
    file(
        &[".pre-commit-config.yaml"],
        "the pre-commit configuration, whose commands a git hook runs",
    ),
    file(
        &[".gitconfig"],
        "a git configuration, loaded by git (`core.fsmonitor`, aliases and filters run commands)",
    ),
    dir(
        &[".config", "git"],
        "in git's configuration directory, loaded by git (`core.fsmonitor`, aliases and filters run commands)",
    ),
    dir(
        &[".ssh"],
        "in `.ssh`, loaded by ssh (`ProxyCommand` runs a command, `authorized_keys` grants logins)",
    ),
    dir(
        &[".config", "fish"],
        "in fish's configuration, run by the fish shell when it starts",
    ),
    dir(
        &[".config", "autostart"],
        "in `.config/autostart`, run by the desktop session at login",
    ),
    dir(
        &[".config", "systemd"],
        "in `.config/systemd`, run by systemd's user manager",
    ),
    file(&[".bashrc"], SHELL),
    file(&[".bash_profile"], SHELL),
    file(&[".bash_login"], SHELL),
    file(&[".bash_logout"], SHELL),
    file(&[".profile"], SHELL),
    file(&[".zshrc"], SHELL),
    file(&[".zprofile"], SHELL),
    file(&[".zshenv"], SHELL),
    file(&[".zlogin"], SHELL),
    file(&[".zlogout"], SHELL),
    file(&[".kshrc"], SHELL),
    file(&[".mkshrc"], SHELL),
    file(&[".cshrc"], SHELL),
    file(&[".tcshrc"], SHELL),
    file(&[".login"], SHELL),
    file(&[".logout"], SHELL),
];

/// The first rule `components` (lower-case names of an absolute path) falls under.
pub(super) fn matching(components: &[String]) -> Option<&'static Rule> {
    RULES.iter().find(|rule| {
        let len = rule.names.len();
        (0..components.len()).any(|start| {
            let Some(window) = components.get(start..start + len) else {
                return false;
            };
            let same = window
                .iter()
                .zip(rule.names)
                .all(|(have, want)| have == want);
            same && (rule.beneath || start + len == components.len())
        })
    })
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
        ] {
            assert!(what(path).is_none(), "{path}");
        }
    }

    #[test]
    fn the_reason_names_the_program() {
        assert!(what("/ws/.git/hooks/pre-commit").unwrap().contains("git"));
        assert!(what("/ws/.envrc").unwrap().contains("direnv"));
        assert!(what("/ws/.cargo/config.toml").unwrap().contains("cargo"));
    }
}
