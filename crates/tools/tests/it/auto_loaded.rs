//! Attacks 6, 7 and 8 of issue 42 performed through `file_write`, the way a model
//! would: creating protected names that do not exist yet, assembling a bare repository
//! file by file, and planting files other programs load by themselves (a hooks
//! directory named by an included global git config, a `.pth` file, agent and editor
//! configuration). Each must be refused and leave nothing behind, while plain files
//! are still written.

use std::path::{Path, PathBuf};

use oxydra_tools::{
    BuiltinToolsConfig, GitConfigLocations, ProtectedPaths, ToolContext, ToolError, builtin_tool,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A workspace (canonical), a separate home folder, and the file tools configured to
/// read git's global configuration from that home.
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    config: BuiltinToolsConfig,
    ctx: ToolContext,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let home = base.join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let locations = GitConfigLocations::from_vars(|name| match name {
        "HOME" => Some(home.clone().into_os_string()),
        "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
        _ => None,
    });
    let config = BuiltinToolsConfig {
        protected: ProtectedPaths::default().with_git_config(locations),
        ..BuiltinToolsConfig::default()
    };
    let ctx = ToolContext::new(&root, CancellationToken::new(), "call-auto-loaded".into());
    Setup {
        _dir: dir,
        root,
        home,
        config,
        ctx,
    }
}

async fn write(setup: &Setup, path: &str, content: &str) -> Result<String, ToolError> {
    builtin_tool("file_write", &setup.config)
        .unwrap()
        .execute(json!({"path": path, "content": content}), &setup.ctx)
        .await
        .map(|output| output.content)
}

async fn assert_refused(setup: &Setup, path: &str, what: &str) {
    match write(setup, path, "planted\n").await {
        Err(error @ ToolError::Protected { .. }) => {
            let message = error.to_string();
            assert!(message.contains(what), "{path}: {message}");
        }
        other => panic!("{path}: expected a refusal naming {what}, got {other:?}"),
    }
    assert!(
        setup.root.join(path).symlink_metadata().is_err(),
        "{path} was written"
    );
}

#[tokio::test]
async fn protected_names_that_do_not_exist_yet_are_refused_at_any_depth() {
    let s = setup();
    for (path, program) in [
        (".git/config", "git"),
        ("sub/.git/config", "git"),
        ("sub/.GIT", "git"),
        (".envrc", "direnv"),
        ("app/.ENVRC", "direnv"),
        (".githooks/pre-commit", "core.hooksPath"),
        (".husky/pre-commit", "husky"),
    ] {
        assert_refused(&s, path, program).await;
    }
    assert!(
        !s.root.join("sub").exists(),
        "nothing was created on the way"
    );
}

#[tokio::test]
async fn a_bare_repository_cannot_be_assembled_file_by_file() {
    let s = setup();
    write(&s, "docs/HEAD", "ref: refs/heads/main\n")
        .await
        .unwrap();
    write(&s, "docs/objects/info/packs", "").await.unwrap();
    write(
        &s,
        "docs/config",
        "[core]\n\tfsmonitor = touch /tmp/pwned\n\tworktree = ..\n",
    )
    .await
    .unwrap();
    // The fourth write would make `docs` a repository git runs the config of.
    assert_refused(
        &s,
        "docs/refs/heads/main",
        "would make `docs` a directory git",
    )
    .await;
    assert!(!s.root.join("docs/refs").exists());
    // The same in another order, in the workspace root itself.
    write(&s, "refs/heads/main", "0000\n").await.unwrap();
    write(&s, "objects/00/11", "").await.unwrap();
    assert_refused(&s, "HEAD", "would make `.` a directory git").await;

    // One that exists already (a test fixture, say) takes no writes beneath it.
    let fixture = s.root.join("fixtures/repo.git");
    for dir in ["objects", "refs/heads"] {
        std::fs::create_dir_all(fixture.join(dir)).unwrap();
    }
    std::fs::write(fixture.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    assert_refused(&s, "fixtures/repo.git/config", "inside `fixtures/repo.git`").await;
    assert_refused(&s, "fixtures/repo.git/hooks/post-checkout", "inside").await;
}

#[tokio::test]
async fn files_other_programs_load_are_refused() {
    let s = setup();
    // `~/.gitconfig` includes a file that sets `core.hooksPath`, as in attack 8.
    std::fs::write(
        s.home.join(".gitconfig"),
        "[include]\n\tpath = ~/git/shared.inc\n",
    )
    .unwrap();
    std::fs::create_dir_all(s.home.join("git")).unwrap();
    std::fs::write(
        s.home.join("git/shared.inc"),
        "[core]\n\thooksPath = tools/git-hooks\n",
    )
    .unwrap();
    std::fs::create_dir_all(s.root.join(".git")).unwrap();
    std::fs::create_dir_all(s.root.join("tools/git-hooks")).unwrap();
    std::fs::write(s.root.join("tools/git-hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    match write(
        &s,
        "tools/git-hooks/pre-commit",
        "#!/bin/sh\ntouch /tmp/x\n",
    )
    .await
    {
        Err(error) => assert!(error.to_string().contains("core.hooksPath"), "{error}"),
        Ok(out) => panic!("the hook was overwritten: {out}"),
    }
    assert_eq!(
        std::fs::read_to_string(s.root.join("tools/git-hooks/pre-commit")).unwrap(),
        "#!/bin/sh\n"
    );
    for (path, program) in [
        (".venv/lib/python3.11/site-packages/zz.pth", "Python"),
        ("src/sitecustomize.py", "Python"),
        (".claude/settings.json", "Claude Code"),
        (".mcp.json", "MCP"),
        (".cursor/mcp.json", "Cursor"),
        (".zed/settings.json", "Zed"),
        (".helix/languages.toml", "Helix"),
        (".nvim.lua", "Neovim"),
        (".exrc", "Vim"),
        ("mise.toml", "mise"),
        (".mise.local.toml", "mise"),
        (".tool-versions", "asdf"),
        (".npmrc", "npm"),
        (".yarnrc.yml", "yarn"),
        ("rust-toolchain.toml", "rustup"),
        (".direnv/cache.rc", "direnv"),
    ] {
        assert_refused(&s, path, program).await;
    }
}

#[tokio::test]
async fn plain_files_are_still_written() {
    let s = setup();
    std::fs::create_dir_all(s.root.join("docs")).unwrap();
    std::fs::write(s.root.join("docs/HEAD"), "ref: refs/heads/main\n").unwrap();
    for path in [
        "src/main.rs",
        "README.md",
        "docs/HEADING.md",
        "docs/objects.txt",
        "objects.txt",
        "models/weights.pth",
        ".gitignore",
        ".env",
        ".gitattributes",
        "Makefile",
    ] {
        write(&s, path, "text\n").await.unwrap();
        assert!(Path::new(&s.root.join(path)).is_file(), "{path}");
    }
}

#[test]
fn check_write_judges_directories_and_removals_by_the_same_rule() {
    let s = setup();
    let protected = &s.config.protected;
    std::fs::create_dir_all(s.root.join("pkg/.vscode")).unwrap();
    std::fs::create_dir_all(s.root.join("docs/objects")).unwrap();
    std::fs::create_dir_all(s.root.join("docs/refs")).unwrap();
    // As the sandbox asks for each changed entry: a directory to create, an entry to
    // remove, a symlink to create.
    for relative in [
        "pkg/.vscode",
        "new/.claude",
        "docs/HEAD",
        "lib/site-packages/evil.pth",
    ] {
        let absolute = s.root.join(relative);
        assert!(
            protected.check_write(&s.root, relative, &absolute).is_err(),
            "{relative}"
        );
    }
    for relative in ["pkg", "pkg/src", "docs/readme.md", "new"] {
        let absolute = s.root.join(relative);
        assert!(
            protected.check_write(&s.root, relative, &absolute).is_ok(),
            "{relative}"
        );
    }
}
