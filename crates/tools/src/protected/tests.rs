use std::os::unix::fs::symlink;
use std::sync::Mutex;

use async_trait::async_trait;

use super::*;
use crate::workspace_policy::WorkspacePolicy;

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

/// A person who answers from a script and records what was asked.
struct Person {
    answer: bool,
    asked: Mutex<Vec<ProtectedWrite>>,
}

#[async_trait]
impl ProtectedWriteConsent for Person {
    async fn allow(&self, write: &ProtectedWrite) -> bool {
        self.asked.lock().unwrap().push(write.clone());
        self.answer
    }
}

#[tokio::test]
async fn with_consent_a_person_is_asked_why_but_never_for_own_files() {
    let w = ws();
    for answer in [true, false] {
        let person = Arc::new(Person {
            answer,
            asked: Mutex::new(Vec::new()),
        });
        let protected = ProtectedPaths::default()
            .with_consent(Arc::clone(&person) as Arc<dyn ProtectedWriteConsent>);
        let resolved = w.policy.resolve(".git/hooks/pre-commit").unwrap();
        let result = protected
            .authorize_write("file_write", &w.root, ".git/hooks/pre-commit", &resolved)
            .await;
        assert_eq!(result.is_ok(), answer, "{result:?}");
        if let Err(err) = result {
            assert!(err.to_string().contains("the person declined"), "{err}");
        }
        let resolved = w.policy.resolve("oxydra.toml").unwrap();
        let err = protected
            .authorize_write("file_write", &w.root, "oxydra.toml", &resolved)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("own configuration"), "{err}");
        let asked = person.asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "only the hook was asked about");
        assert_eq!(asked[0].tool, "file_write");
        assert!(
            asked[0]
                .reason
                .starts_with("`.git/hooks/pre-commit` is in `.git`, which git loads and runs"),
            "{}",
            asked[0].reason
        );
    }
}

/// A policy that reads no system or global git configuration.
fn local_only() -> ProtectedPaths {
    ProtectedPaths::default().with_git_config(GitConfigLocations::default())
}

/// A path the pattern of `rule` matches: `*.pth` becomes `zz.pth`, `stem.*` becomes
/// `stem.toml`, a directory gets a file beneath it.
fn example(rule: &rules::Rule) -> String {
    let names: Vec<String> = rule
        .names()
        .map(|name| {
            if let Some(suffix) = name.strip_prefix('*') {
                format!("zz{suffix}")
            } else if let Some(stem) = name.strip_suffix(".*") {
                format!("{stem}.toml")
            } else {
                name.to_owned()
            }
        })
        .collect();
    let mut path = names.join("/");
    if rule.beneath() {
        path.push_str("/settings.json");
    }
    path
}

/// Upper-cases every other letter: `.claude/x` → `.ClAuDe/X`.
fn mixed_case(path: &str) -> String {
    path.chars()
        .enumerate()
        .map(|(index, c)| {
            if index % 2 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

#[test]
fn every_name_of_the_table_is_refused_before_it_exists_at_any_depth_in_any_case() {
    let w = ws();
    let protected = local_only();
    for rule in rules::RULES {
        let path = example(rule);
        for given in [
            path.clone(),
            format!("deep/er/{path}"),
            mixed_case(&path),
            format!("Deep/{}", path.to_uppercase()),
        ] {
            assert!(
                w.root.join(&given).symlink_metadata().is_err() || given.starts_with(".git"),
                "{given} exists"
            );
            let err = w.check(&protected, &given).unwrap_err();
            assert!(err.starts_with(&format!("refused: `{given}` is ")), "{err}");
            assert!(err.contains(rule.what), "{given}: {err}");
        }
        // The name alone (the directory being created, or removed) is refused too.
        let first = path
            .split('/')
            .take(rule.names().count())
            .collect::<Vec<_>>();
        let whole = first.join("/");
        assert!(w.check(&protected, &whole).is_err(), "{whole}");
    }
}

#[test]
fn what_only_looks_like_a_protected_name_is_allowed() {
    let w = ws();
    let protected = local_only();
    std::fs::create_dir_all(w.root.join("docs")).unwrap();
    std::fs::write(w.root.join("docs/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir(w.root.join("docs/refs")).unwrap();
    for path in [
        "src/main.rs",
        "README.md",
        "docs/HEADING.md",
        "docs/objects.txt",
        "docs/head.md",
        "docs/refs.md",
        "objects.txt",
        "objects/x",
        "HEAD",
        "refs/heads/main",
        "models/resnet.pth",
        "lib/site-packages/pkg/data.pth",
        ".envrc.example",
        "env/claude.md",
        "my.git/config",
        "githooks/pre-commit",
        "premise.toml",
        "sitecustomizer.py",
        ".vimrc.bak",
    ] {
        assert!(w.check(&protected, path).is_ok(), "{path}");
    }
}

/// Creates `name` in `dir` as a directory (`objects`, `refs`) or a file (`HEAD`).
fn create(dir: &Path, name: &str) {
    if name == "HEAD" {
        std::fs::write(dir.join(name), "ref: refs/heads/main\n").unwrap();
    } else {
        std::fs::create_dir(dir.join(name)).unwrap();
    }
}

#[test]
fn the_last_of_head_objects_and_refs_is_refused_in_every_order() {
    let orders = [
        ["HEAD", "objects", "refs"],
        ["HEAD", "refs", "objects"],
        ["objects", "HEAD", "refs"],
        ["objects", "refs", "HEAD"],
        ["refs", "HEAD", "objects"],
        ["refs", "objects", "HEAD"],
    ];
    for order in orders {
        let w = ws();
        let protected = local_only();
        std::fs::create_dir(w.root.join("docs")).unwrap();
        for name in &order[..2] {
            let given = format!("docs/{name}");
            assert!(w.check(&protected, &given).is_ok(), "{order:?} {given}");
            create(&w.root.join("docs"), name);
        }
        let last = order[2];
        for given in [
            format!("docs/{last}"),
            format!("docs/{}", last.to_lowercase()),
            // A file written deeper creates the directory on its way.
            format!("docs/{last}/heads/main"),
        ] {
            let err = w.check(&protected, &given).unwrap_err();
            assert!(
                err.contains("would make `docs` a directory git"),
                "{order:?}: {err}"
            );
        }
        // The workspace root is a directory like any other.
        let w = ws();
        for name in &order[..2] {
            create(&w.root, name);
        }
        let err = w.check(&protected, last).unwrap_err();
        assert!(err.contains("would make `.` a directory git"), "{err}");
    }
}

#[test]
fn nothing_is_written_inside_a_directory_git_takes_for_a_repository() {
    let w = ws();
    let protected = local_only();
    let repo = w.root.join("docs/nested");
    std::fs::create_dir_all(repo.join("objects/ab")).unwrap();
    std::fs::create_dir_all(repo.join("refs/heads")).unwrap();
    std::fs::write(repo.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(repo.join("config"), "[core]\n\tbare = true\n").unwrap();
    for given in [
        "docs/nested/config",
        "docs/nested/hooks/pre-commit",
        "docs/nested/objects/ab/cdef",
        "docs/nested/new/dir/file",
        "docs/nested/HEAD",
        "docs/nested/refs",
    ] {
        let err = w.check(&protected, given).unwrap_err();
        assert!(err.contains("inside `docs/nested`"), "{given}: {err}");
    }
    // Nor is it changed or removed itself.
    let err = w.check(&protected, "docs/nested").unwrap_err();
    assert!(
        err.contains("`docs/nested`, a directory git takes"),
        "{err}"
    );
    // Beside it is fine.
    assert!(w.check(&protected, "docs/other.md").is_ok());
    assert!(w.check(&protected, "docs").is_ok());
    // A symlink into it is refused where it leads, even when the caller passes the
    // path as named rather than resolved.
    symlink(&repo, w.root.join("shortcut")).unwrap();
    let named = w.root.join("shortcut/config");
    let err = protected
        .check_write(&w.root, "shortcut/config", &named)
        .unwrap_err();
    assert!(err.to_string().contains("inside `docs/nested`"), "{err}");
}

#[test]
fn a_commondir_beside_head_is_a_linked_work_tree_git_directory() {
    let w = ws();
    let protected = local_only();
    std::fs::create_dir(w.root.join("admin")).unwrap();
    std::fs::write(w.root.join("admin/commondir"), "../.git\n").unwrap();
    let err = w.check(&protected, "admin/HEAD").unwrap_err();
    assert!(err.contains("would make `admin`"), "{err}");
    std::fs::write(w.root.join("admin/HEAD"), "ref: refs/heads/main\n").unwrap();
    let err = w.check(&protected, "admin/config.worktree").unwrap_err();
    assert!(err.contains("inside `admin`"), "{err}");
    // `gitdir` is only a back-pointer git's worktree commands read: not a repository.
    std::fs::create_dir(w.root.join("other")).unwrap();
    std::fs::write(w.root.join("other/HEAD"), "x").unwrap();
    assert!(w.check(&protected, "other/gitdir").is_ok());
}

#[test]
fn existing_protected_entries_may_not_be_removed_or_replaced() {
    let w = ws();
    let protected = local_only();
    std::fs::create_dir_all(w.root.join("sub/.vscode")).unwrap();
    std::fs::create_dir_all(w.root.join("sub/.git")).unwrap();
    // The directory itself and an existing file: a removal is judged like a write.
    for given in [
        "sub/.vscode",
        "sub/.git",
        ".git",
        ".git/config",
        ".git/hooks",
    ] {
        assert!(w.check(&protected, given).is_err(), "{given}");
    }
}

#[test]
fn hooks_paths_from_an_included_file_and_from_global_config_are_protected() {
    let w = ws();
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[include]\n\tpath = ~/.gitconfig.d/hooks.inc\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".gitconfig.d")).unwrap();
    std::fs::write(
        home.join(".gitconfig.d/hooks.inc"),
        "[core]\n\thooksPath = .githooks-from-include\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".config/git/config"),
        "[includeIf \"gitdir:~/work/\"]\n\tpath = work.inc\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".config/git/work.inc"),
        "[core]\n\thooksPath = tools/hooks\n",
    )
    .unwrap();
    let locations = GitConfigLocations {
        system: Vec::new(),
        global: vec![home.join(".config/git/config"), home.join(".gitconfig")],
        home: Some(home.clone()),
    };
    let protected = ProtectedPaths::default().with_git_config(locations);
    for given in [
        ".githooks-from-include/pre-commit",
        "tools/hooks/post-checkout",
        "TOOLS/Hooks/x",
        "tools/hooks",
    ] {
        let err = w.check(&protected, given).unwrap_err();
        assert!(err.contains("core.hooksPath"), "{given}: {err}");
    }
    assert!(w.check(&protected, "tools/other.sh").is_ok());
    // Without those files, the same paths are plain.
    assert!(w.check(&local_only(), "tools/hooks/post-checkout").is_ok());
    // A system file counts too.
    let system = home.join("gitconfig");
    std::fs::write(&system, "[core]\n\tfsmonitor = scripts/fsmonitor.sh\n").unwrap();
    let protected = ProtectedPaths::default().with_git_config(GitConfigLocations {
        system: vec![system],
        global: Vec::new(),
        home: None,
    });
    let err = w.check(&protected, "scripts/fsmonitor.sh").unwrap_err();
    assert!(err.contains("core.fsmonitor"), "{err}");
}

#[test]
fn a_module_a_pth_file_imports_is_protected() {
    let w = ws();
    let protected = local_only();
    let site = w.root.join(".venv/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("_virtualenv.pth"), "import _virtualenv\n").unwrap();
    let err = w
        .check(
            &protected,
            ".venv/lib/python3.11/site-packages/_virtualenv.py",
        )
        .unwrap_err();
    assert!(err.contains("Python runs it at every start"), "{err}");
    let err = w
        .check(&protected, ".venv/lib/python3.11/site-packages/zz.pth")
        .unwrap_err();
    assert!(err.contains("`.pth`"), "{err}");
    assert!(
        w.check(
            &protected,
            ".venv/lib/python3.11/site-packages/requests/api.py"
        )
        .is_ok()
    );
}

#[test]
fn docs_security_lists_every_pattern_with_its_program_and_source() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md"),
    )
    .unwrap();
    let start = docs
        .find("## Files other programs load by themselves")
        .expect("the section");
    let section = &docs[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    for rule in rules::RULES {
        assert!(
            section.contains(&format!("`{}`", rule.pattern)),
            "{} is not in docs/security.md",
            rule.pattern
        );
        assert!(section.contains(rule.source), "{}", rule.source);
    }
}
