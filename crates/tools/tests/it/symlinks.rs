//! Symlinks through every file tool: links that stay inside keep working, links
//! that lead out are refused, a dangling link is never written through, and `..`
//! after a link is judged where the link really leads.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use oxydra_tools::{BuiltinToolsConfig, ToolContext, ToolError, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ws: PathBuf,
    out: PathBuf,
    registry: ToolRegistry,
    ctx: ToolContext,
}

/// A workspace with `src/main.rs` and `a/b/`, an outside directory with
/// `secret.txt` and `sub/`, and links of every kind in the workspace.
fn setup() -> Setup {
    let ws_dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let ws = ws_dir.path().canonicalize().unwrap();
    let out = out_dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("a/b")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(ws.join("a/c.txt"), "c inside\n").unwrap();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(out.join("secret.txt"), "secret outside\n").unwrap();
    // Inside, staying inside: absolute and relative, to a directory and to a file.
    symlink(ws.join("src"), ws.join("inner")).unwrap();
    symlink("src", ws.join("inner-rel")).unwrap();
    symlink("src/main.rs", ws.join("main-link")).unwrap();
    symlink(ws.join("a/b"), ws.join("b-link")).unwrap();
    // Leading out.
    symlink(&out, ws.join("out")).unwrap();
    symlink(out.join("sub"), ws.join("out-sub")).unwrap();
    symlink(out.join("secret.txt"), ws.join("secret-link")).unwrap();
    symlink("../../../../../../../../..", ws.join("up")).unwrap();
    // Dangling, out and in.
    symlink(out.join("new.txt"), ws.join("dangling-out")).unwrap();
    symlink("src/not-yet.txt", ws.join("dangling-in")).unwrap();
    let registry = ToolRegistry::with_builtins(&BuiltinToolsConfig::default());
    let ctx = ToolContext::new(&ws, CancellationToken::new(), "call-links".into());
    Setup {
        _dirs: (ws_dir, out_dir),
        ws,
        out,
        registry,
        ctx,
    }
}

impl Setup {
    async fn call(&self, tool: &str, args: Value) -> Result<String, ToolError> {
        let tool = self.registry.get(tool).unwrap();
        tool.execute(args, &self.ctx).await.map(|out| out.content)
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args.clone()).await {
            Ok(text) => text,
            Err(err) => panic!("{tool} {args}: {err}"),
        }
    }

    async fn refused(&self, tool: &str, args: Value) {
        match self.call(tool, args.clone()).await {
            Err(ToolError::OutsideWorkspace { .. }) => {}
            other => panic!("{tool} {args}: expected OutsideWorkspace, got {other:?}"),
        }
    }

    /// The names in the outside directory (it starts with `secret.txt` and `sub`).
    fn outside(&self) -> Vec<String> {
        let mut names: Vec<_> = walk(&self.out);
        names.sort();
        names
    }
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        names.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type().unwrap().is_dir() {
            names.extend(walk(&entry.path()));
        }
    }
    names
}

#[tokio::test]
async fn a_symlink_that_stays_inside_still_works() {
    let s = setup();
    for path in ["inner/main.rs", "inner-rel/main.rs", "main-link"] {
        let text = s.ok("file_read", json!({"path": path})).await;
        assert_eq!(text, "fn main() {}\n", "{path}");
    }
    let listing = s.ok("file_list", json!({"path": "inner"})).await;
    assert_eq!(listing, "src/main.rs");
    let found = s
        .ok(
            "file_search",
            json!({"pattern": "main", "path": "inner-rel"}),
        )
        .await;
    assert_eq!(found, "src/main.rs:1: fn main() {}");
    let wrote = s
        .ok(
            "file_write",
            json!({"path": "inner/new/x.txt", "content": "x"}),
        )
        .await;
    assert_eq!(wrote, "Created `src/new/x.txt` (1 bytes)");
    assert_eq!(
        std::fs::read_to_string(s.ws.join("src/new/x.txt")).unwrap(),
        "x"
    );
    let edited = s
        .ok(
            "file_edit",
            json!({"path": "main-link", "old": "main", "new": "start"}),
        )
        .await;
    assert_eq!(
        edited,
        "Edited `src/main.rs`: replaced 4 bytes at line 1 with 5 bytes"
    );
    let wrote = s
        .ok(
            "file_write",
            json!({"path": "main-link", "content": "over"}),
        )
        .await;
    assert_eq!(wrote, "Overwrote `src/main.rs` (4 bytes)");
    // The links are still links: writing through them replaced their target.
    assert!(
        s.ws.join("main-link")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.join("src/main.rs")).unwrap(),
        "over"
    );
}

#[tokio::test]
async fn a_symlink_that_points_out_is_refused_by_every_tool() {
    let s = setup();
    let before = s.outside();
    for path in [
        "out/secret.txt",
        "secret-link",
        "up/etc/passwd",
        "out-sub/../secret.txt",
    ] {
        s.refused("file_read", json!({"path": path})).await;
        s.refused(
            "file_edit",
            json!({"path": path, "old": "secret", "new": "x"}),
        )
        .await;
        s.refused("file_write", json!({"path": path, "content": "x"}))
            .await;
    }
    for path in ["out", "out-sub", "up"] {
        s.refused("file_list", json!({"path": path})).await;
        s.refused("file_search", json!({"pattern": "secret", "path": path}))
            .await;
        s.refused(
            "file_write",
            json!({"path": format!("{path}/new/x.txt"), "content": "x"}),
        )
        .await;
    }
    // Walks from the root list the links but never go through them.
    let listing = s.ok("file_list", json!({"recursive": true})).await;
    assert!(
        listing.contains("out@") && !listing.contains("secret.txt"),
        "{listing}"
    );
    let found = s.ok("file_search", json!({"pattern": "secret"})).await;
    assert_eq!(found, "no matches for `secret` in `.`");
    assert_eq!(s.outside(), before, "something was written outside");
    assert_eq!(
        std::fs::read_to_string(s.out.join("secret.txt")).unwrap(),
        "secret outside\n"
    );
}

#[tokio::test]
async fn a_dangling_symlink_as_the_last_name_of_a_write_is_refused() {
    let s = setup();
    let before = s.outside();
    for path in ["dangling-out", "dangling-in"] {
        s.refused("file_write", json!({"path": path, "content": "x"}))
            .await;
        assert!(s.ws.join(path).symlink_metadata().unwrap().is_symlink());
    }
    assert_eq!(s.outside(), before, "the write followed the link outside");
    assert!(!s.ws.join("src/not-yet.txt").exists());
}

#[tokio::test]
async fn dot_dot_after_a_symlink_is_judged_where_the_link_leads() {
    let s = setup();
    // `b-link` is `a/b`, so `b-link/..` is `a`, not the root.
    let text = s.ok("file_read", json!({"path": "b-link/../c.txt"})).await;
    assert_eq!(text, "c inside\n");
    let wrote = s
        .ok(
            "file_write",
            json!({"path": "b-link/../d.txt", "content": "d"}),
        )
        .await;
    assert_eq!(wrote, "Created `a/d.txt` (1 bytes)");
    // `out-sub/..` is the outside directory; `inner/../..` is above the root.
    s.refused("file_read", json!({"path": "out-sub/../secret.txt"}))
        .await;
    s.refused("file_list", json!({"path": "out-sub/.."})).await;
    s.refused(
        "file_write",
        json!({"path": "out-sub/../new.txt", "content": "x"}),
    )
    .await;
    s.refused("file_read", json!({"path": "inner/../../etc/passwd"}))
        .await;
    assert!(!s.out.join("new.txt").exists());
}
