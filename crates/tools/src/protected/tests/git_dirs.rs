//! Directories git takes for a repository, whatever their name, and the paths git's
//! configuration names.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::{local_only, ws};
use crate::protected::{GitConfigLocations, ProtectedPaths};

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
