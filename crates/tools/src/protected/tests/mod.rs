//! The protected-paths policy's tests: Oxydra's own files, symlinks, git's hooks path
//! and the allow list here; the table of names, git directories and consent beside.

use std::os::unix::fs::symlink;

use super::*;
use crate::workspace_policy::WorkspacePolicy;

mod consent;
mod git_dirs;
mod names;

/// A workspace (canonical) and the policy resolving in it.
struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    policy: WorkspacePolicy,
}

fn ws() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(root.join("notes.md"), "notes").unwrap();
    let policy = WorkspacePolicy::new(&root).unwrap();
    Ws {
        _dir: dir,
        root,
        policy,
    }
}

impl Ws {
    /// What `check_write` says of `given`, as the file tools call it.
    fn check(&self, protected: &ProtectedPaths, given: &str) -> Result<(), String> {
        let resolved = self.policy.resolve(given).map_err(|err| err.to_string())?;
        protected
            .check_write(&self.root, given, &resolved.absolute)
            .map_err(|err| err.to_string())
    }
}

/// A policy that reads no system or global git configuration.
fn local_only() -> ProtectedPaths {
    ProtectedPaths::default().with_git_config(GitConfigLocations::default())
}

#[test]
fn any_oxydra_toml_is_configuration_in_any_case() {
    let protected = ProtectedPaths::default();
    let root = Path::new("/ws");
    for path in ["oxydra.toml", "deep/dir/Oxydra.TOML", "OXYDRA.TOML"] {
        let err = protected
            .check_write(root, path, &root.join(path))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("refused: `{path}` is Oxydra's own configuration")),
            "{err}"
        );
        assert!(!err.to_string().contains("allow_protected"), "{err}");
        assert!(protected.check_read(&root.join(path), "x").is_ok());
    }
    for path in ["oxydra.toml.bak", "my-oxydra.toml", "oxydra.toml/x"] {
        assert!(
            protected.check_write(root, path, &root.join(path)).is_ok(),
            "{path}"
        );
    }
}

#[test]
fn the_database_its_siblings_and_the_trust_store_refuse_reads_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let protected = ProtectedPaths::default()
        .with(ProtectedKind::Database, root.join("state/sessions.sqlite"))
        .with(ProtectedKind::TrustStore, root.join("trust.toml"))
        .with(ProtectedKind::Config, root.join("my-config.toml"));
    for name in [
        "state/sessions.sqlite",
        "state/sessions.sqlite-wal",
        "state/sessions.sqlite-shm",
        "state/Sessions.SQLITE-journal",
        "trust.toml",
    ] {
        let path = root.join(name);
        assert!(protected.check_write(&root, name, &path).is_err(), "{name}");
        let err = protected.check_read(&path, name).unwrap_err();
        assert!(err.to_string().contains("may not be read"), "{err}");
        assert!(protected.refuses_read(&path));
    }
    let config = root.join("my-config.toml");
    assert!(
        protected
            .check_write(&root, "my-config.toml", &config)
            .is_err()
    );
    assert!(protected.check_read(&config, "my-config.toml").is_ok());
    let other = root.join("state/other.sqlite");
    assert!(protected.check_write(&root, "x", &other).is_ok());
}

#[test]
fn a_directory_created_after_the_list_is_resolved_when_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    // `link/later` does not exist yet: the path is kept as given.
    let protected =
        ProtectedPaths::default().with(ProtectedKind::Database, dir.path().join("link/later/o.db"));
    std::fs::create_dir(dir.path().join("real/later")).unwrap();
    let canonical = dir.path().canonicalize().unwrap();
    let resolved = canonical.join("real/later/o.db-wal");
    assert_eq!(protected.kind_of(&resolved), Some(ProtectedKind::Database));
    assert_eq!(protected.kind_of(&canonical.join("real/later/p.db")), None);
}

#[test]
fn paths_other_programs_run_are_refused_in_any_case_and_say_which_program() {
    let w = ws();
    let protected = ProtectedPaths::default();
    for (path, program) in [
        (".git/config", "git"),
        (".git/hooks/pre-commit", "git"),
        (".GIT/HOOKS/post-checkout", "git"),
        ("sub/.git/config", "git"),
        (".cargo/config.toml", "cargo"),
        (".Cargo/Config", "cargo"),
        (".envrc", "direnv"),
        ("app/.envrc", "direnv"),
        (".vscode/tasks.json", "VS Code"),
        (".idea/workspace.xml", "JetBrains"),
        (".devcontainer/devcontainer.json", "dev container"),
        (".husky/pre-push", "husky"),
        (".bashrc", "shell"),
        (".zshenv", "shell"),
        (".profile", "shell"),
        (".config/fish/config.fish", "fish"),
    ] {
        let err = w.check(&protected, path).unwrap_err();
        assert!(err.starts_with(&format!("refused: `{path}` is ")), "{err}");
        assert!(err.contains(program), "{path}: {err}");
        assert!(err.contains("`[tools] allow_protected`"), "{err}");
    }
    for path in [
        "notes.md",
        "src/main.rs",
        ".gitignore",
        "envrc",
        ".cargo/env",
    ] {
        assert!(w.check(&protected, path).is_ok(), "{path}");
    }
}

#[test]
fn symlinks_are_refused_both_ways() {
    let w = ws();
    let protected = ProtectedPaths::default();
    // A link that leads to a protected path.
    symlink(w.root.join(".git/config"), w.root.join("innocent")).unwrap();
    symlink(w.root.join(".git"), w.root.join("repo")).unwrap();
    let err = w.check(&protected, "innocent").unwrap_err();
    assert!(err.contains("`innocent` → `.git/config`"), "{err}");
    assert!(w.check(&protected, "repo/hooks/pre-commit").is_err());
    // A protected name that is itself a link: refused as named, and its target too.
    std::fs::create_dir(w.root.join("notes")).unwrap();
    std::fs::write(w.root.join("notes/env.sh"), "export A=1").unwrap();
    symlink("notes/env.sh", w.root.join(".envrc")).unwrap();
    let err = w.check(&protected, ".envrc").unwrap_err();
    assert!(err.contains("direnv"), "{err}");
    let err = w.check(&protected, "notes/env.sh").unwrap_err();
    assert!(err.contains("the target of the symlink `.envrc`"), "{err}");
    assert!(err.contains("direnv"), "{err}");
    // A protected directory linked elsewhere protects what is beneath its target.
    std::fs::create_dir(w.root.join("ide")).unwrap();
    symlink(w.root.join("ide"), w.root.join(".vscode")).unwrap();
    assert!(w.check(&protected, "ide/tasks.json").is_err());
    assert!(w.check(&protected, ".vscode/tasks.json").is_err());
    assert!(w.check(&protected, "notes/other.md").is_ok());
}

#[test]
fn an_own_file_that_is_a_symlink_protects_link_and_target() {
    let w = ws();
    std::fs::create_dir(w.root.join("dotfiles")).unwrap();
    std::fs::write(w.root.join("dotfiles/oxydra-config"), "").unwrap();
    std::fs::create_dir_all(w.root.join(".config/oxydra")).unwrap();
    symlink(
        w.root.join("dotfiles/oxydra-config"),
        w.root.join(".config/oxydra/config.toml"),
    )
    .unwrap();
    let protected = ProtectedPaths::default().with(
        ProtectedKind::Config,
        w.root.join(".config/oxydra/config.toml"),
    );
    for path in [
        ".config/oxydra/config.toml",
        "dotfiles/oxydra-config",
        "DOTFILES/oxydra-config",
    ] {
        let err = w.check(&protected, path);
        assert!(
            err.as_ref()
                .is_err_and(|err| err.contains("Oxydra's own configuration"))
                || err
                    .as_ref()
                    .is_err_and(|err| err.contains("does not exist")),
            "{path}: {err:?}"
        );
    }
    let err = w.check(&protected, "dotfiles/oxydra-config").unwrap_err();
    assert!(err.contains("Oxydra's own configuration"), "{err}");
    // Allowing never reaches Oxydra's own files.
    let allowing = protected.clone().allowing(["dotfiles"]);
    assert!(w.check(&allowing, "dotfiles/oxydra-config").is_err());
}

#[test]
fn the_hooks_path_git_is_configured_with_is_protected() {
    let w = ws();
    std::fs::write(
        w.root.join(".git/config"),
        "[core]\n\tbare = false\n\thooksPath = .githooks\n",
    )
    .unwrap();
    std::fs::create_dir(w.root.join(".githooks")).unwrap();
    std::fs::write(w.root.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
    let protected = ProtectedPaths::default();
    for path in [
        ".githooks/pre-commit",
        ".githooks/post-merge",
        ".GitHooks/x",
    ] {
        let err = w.check(&protected, path).unwrap_err();
        assert!(err.contains("core.hooksPath"), "{path}: {err}");
    }
    assert!(w.check(&protected, "githooks/x").is_ok());
    assert!(
        protected
            .read_only_paths_within(&w.root)
            .contains(&w.root.join(".githooks"))
    );
}

#[test]
fn a_trusted_allow_list_lifts_only_what_it_names() {
    let w = ws();
    let protected = ProtectedPaths::default().allowing([".vscode/settings.json", ".husky"]);
    assert!(w.check(&protected, ".vscode/settings.json").is_ok());
    assert!(w.check(&protected, ".VSCODE/Settings.json").is_ok());
    assert!(w.check(&protected, ".husky/pre-commit").is_ok());
    assert!(w.check(&protected, ".vscode/tasks.json").is_err());
    // An allowed name that leads to another protected path is still refused there.
    std::fs::create_dir(w.root.join(".vscode")).unwrap();
    symlink(
        w.root.join(".git/config"),
        w.root.join(".vscode/settings.json"),
    )
    .unwrap();
    let err = w.check(&protected, ".vscode/settings.json").unwrap_err();
    assert!(err.contains("`.git/config`"), "{err}");
}

#[test]
fn read_only_paths_within_lists_what_exists_outermost_first() {
    let w = ws();
    std::fs::create_dir_all(w.root.join(".cargo")).unwrap();
    std::fs::write(w.root.join(".cargo/config.toml"), "").unwrap();
    std::fs::write(w.root.join(".cargo/env"), "").unwrap();
    std::fs::create_dir_all(w.root.join("sub/.vscode")).unwrap();
    std::fs::write(w.root.join("sub/.envrc"), "").unwrap();
    std::fs::write(w.root.join("oxydra.toml"), "").unwrap();
    std::fs::write(w.root.join("db.sqlite"), "").unwrap();
    std::fs::write(w.root.join("env.sh"), "").unwrap();
    symlink("env.sh", w.root.join(".envrc")).unwrap();
    let protected =
        ProtectedPaths::default().with(ProtectedKind::Database, w.root.join("db.sqlite"));
    let listed = protected.read_only_paths_within(&w.root);
    let expected: Vec<PathBuf> = [
        ".cargo/config.toml",
        ".envrc",
        ".git",
        "db.sqlite",
        "env.sh",
        "oxydra.toml",
        "sub/.envrc",
        "sub/.vscode",
    ]
    .iter()
    .map(|name| w.root.join(name))
    .collect();
    assert_eq!(listed, expected);
}
