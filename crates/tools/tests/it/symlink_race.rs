//! The symlink race, performed: a thread swaps a workspace subdirectory for a
//! symlink to a directory outside (and back) in a tight loop while every file tool
//! reads and writes through that subdirectory hundreds of times. Not one read may
//! return outside content and not one write may land outside.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use oxydra_tools::{BuiltinToolsConfig, ToolContext, ToolError, ToolRegistry};
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Calls of each reading tool, and of each writing tool, made through `sub`.
const READS: u64 = 450;
const WRITES: u64 = 150;
/// A word only the outside files hold.
const OUTSIDE: &str = "OUTSIDE-ONLY";

/// Swaps `ws/sub` (a directory) and `ws/alt` (a symlink to the outside directory)
/// with `RENAME_EXCHANGE` until told to stop, so `sub` always exists and is one or
/// the other; counts the swaps.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Swapper {
    fn start(ws: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (sub, alt) = (ws.join("sub"), ws.join("alt"));
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(CWD, &sub, CWD, &alt, RenameFlags::EXCHANGE).unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Wait until the swapper has swapped more than `seen` times in all, so each
    /// call starts after it has moved on and the two keep interleaving.
    fn wait_past(&self, seen: u64) {
        while self.swaps.load(Ordering::Relaxed) <= seen {
            std::thread::yield_now();
        }
    }

    fn swaps(&self) -> u64 {
        self.swaps.load(Ordering::Relaxed)
    }

    /// Stop, and leave `sub` a directory again.
    fn stop(mut self, ws: &Path) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        if ws.join("sub").symlink_metadata().unwrap().is_symlink() {
            renameat_with(
                CWD,
                ws.join("sub"),
                CWD,
                ws.join("alt"),
                RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
    }
}

/// What one kind of call did while racing.
#[derive(Debug, Default)]
struct Tally {
    ok: u64,
    refused: u64,
    escapes: Vec<String>,
}

impl Tally {
    /// Count `result`; an `Ok` whose text `escaped` says came from outside is an escape.
    fn count(&mut self, result: Result<String, ToolError>, escaped: impl Fn(&str) -> bool) {
        match result {
            Ok(text) if escaped(&text) => self.escapes.push(text),
            Ok(_) => self.ok += 1,
            Err(_) => self.refused += 1,
        }
    }
}

struct Workspace {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    ws: PathBuf,
    out: PathBuf,
    registry: ToolRegistry,
    ctx: ToolContext,
}

impl Workspace {
    fn new() -> Self {
        let ws_dir = tempfile::tempdir().unwrap();
        let out_dir = tempfile::tempdir().unwrap();
        let ws = ws_dir.path().canonicalize().unwrap();
        let out = out_dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/secret.txt"), "inside\n").unwrap();
        std::fs::write(ws.join("sub/edit.txt"), "counter\n").unwrap();
        std::fs::write(out.join("secret.txt"), format!("{OUTSIDE} secret\n")).unwrap();
        std::fs::write(out.join("edit.txt"), format!("counter {OUTSIDE}\n")).unwrap();
        std::fs::write(out.join("only-outside.txt"), format!("{OUTSIDE}\n")).unwrap();
        std::os::unix::fs::symlink(&out, ws.join("alt")).unwrap();
        let registry = ToolRegistry::with_builtins(&BuiltinToolsConfig::default());
        let ctx = ToolContext::new(&ws, CancellationToken::new(), "call-race".into());
        Self {
            _dirs: (ws_dir, out_dir),
            ws,
            out,
            registry,
            ctx,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Result<String, ToolError> {
        let tool = self.registry.get(tool).unwrap();
        tool.execute(args, &self.ctx).await.map(|out| out.content)
    }

    /// Everything now in the outside directory, with its content.
    fn outside(&self) -> Vec<(String, String)> {
        let mut found: Vec<_> = std::fs::read_dir(&self.out)
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let content = std::fs::read_to_string(entry.path()).unwrap_or_default();
                (entry.file_name().to_string_lossy().into_owned(), content)
            })
            .collect();
        found.sort();
        found
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_directory_for_a_symlink_never_lets_a_tool_out() {
    let w = Workspace::new();
    let before = w.outside();
    let swapper = Swapper::start(&w.ws);
    let outside = |text: &str| text.contains(OUTSIDE);
    let mut read = Tally::default();
    let mut list = Tally::default();
    let mut list_all = Tally::default();
    let mut search = Tally::default();
    let mut search_all = Tally::default();
    let mut write = Tally::default();
    let mut write_deep = Tally::default();
    let mut edit = Tally::default();
    for round in 0..READS {
        swapper.wait_past(round);
        let result = w.call("file_read", json!({"path": "sub/secret.txt"})).await;
        read.count(result, outside);
        if round % 3 != 0 {
            continue;
        }
        let result = w.call("file_list", json!({"path": "sub"})).await;
        list.count(result, |t| t.contains("only-outside"));
        let result = w.call("file_list", json!({"recursive": true})).await;
        list_all.count(result, |t| t.contains("only-outside"));
        let result = w
            .call("file_search", json!({"pattern": OUTSIDE, "path": "sub"}))
            .await;
        search.count(result, |t| !t.starts_with("no matches"));
        let result = w.call("file_search", json!({"pattern": OUTSIDE})).await;
        search_all.count(result, |t| !t.starts_with("no matches"));
    }
    for round in 0..WRITES {
        swapper.wait_past(READS + round);
        let content = format!("written {round}");
        let result = w
            .call(
                "file_write",
                json!({"path": format!("sub/w{round}.txt"), "content": content}),
            )
            .await;
        write.count(result, |_| false);
        let result = w
            .call(
                "file_write",
                json!({"path": format!("sub/new{round}/deep/w.txt"), "content": content}),
            )
            .await;
        write_deep.count(result, |_| false);
        let result = w
            .call(
                "file_edit",
                json!({"path": "sub/edit.txt", "old": "counter", "new": "counter+"}),
            )
            .await;
        edit.count(result, |_| false);
    }
    let swaps = swapper.swaps();
    swapper.stop(&w.ws);

    let tallies: [(&str, &Tally); 8] = [
        ("file_read", &read),
        ("file_list sub", &list),
        ("file_list .", &list_all),
        ("file_search sub", &search),
        ("file_search .", &search_all),
        ("file_write", &write),
        ("file_write (new dirs)", &write_deep),
        ("file_edit", &edit),
    ];
    for (name, tally) in &tallies {
        eprintln!(
            "{name}: {} ok, {} refused, {} escaped",
            tally.ok,
            tally.refused,
            tally.escapes.len()
        );
    }
    eprintln!("{swaps} swaps");
    let mut escapes: Vec<String> = tallies
        .iter()
        .filter(|(_, tally)| !tally.escapes.is_empty())
        .map(|(name, tally)| format!("{name} returned outside content: {:?}", tally.escapes))
        .collect();
    // Not one write landed outside: the outside directory is exactly as it was.
    let after = w.outside();
    if after != before {
        escapes.push(format!("writes landed outside the workspace: {after:?}"));
    }
    assert!(escapes.is_empty(), "{escapes:#?}");
    // The race was live: some reads found the directory, some the symlink.
    assert!(read.ok > 0 && read.refused > 0, "{read:?}");
    assert_eq!(read.ok + read.refused, READS);
    // What went in stayed in: every write that succeeded is inside.
    let inside = (0..WRITES)
        .filter(|round| w.ws.join(format!("sub/w{round}.txt")).is_file())
        .count() as u64;
    assert_eq!(inside, write.ok);
    let edited = std::fs::read_to_string(w.ws.join("sub/edit.txt")).unwrap();
    assert_eq!(edited, format!("counter{}\n", "+".repeat(edit.ok as usize)));
}
