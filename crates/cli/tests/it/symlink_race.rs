//! The symlink race through `oxydra run`: a scripted model asks, turn after turn, for
//! hundreds of reads and writes through a workspace directory while a local process
//! swaps that directory for a symlink to a directory outside (and back) in a loop.
//! Nothing outside may reach the model, and nothing may be written outside.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Sandbox, stderr, stdout};
use oxydra_test_support::{MockServer, openai};
use rustix::fs::{CWD, RenameFlags, renameat_with};

const TURNS: usize = 40;
const READS_PER_TURN: usize = 5;
const WRITES_PER_TURN: usize = 2;
const READS: usize = TURNS * READS_PER_TURN;
const WRITES: usize = TURNS * WRITES_PER_TURN;
/// Yields the swapper makes between two swaps.
const HOLD_YIELDS: usize = 10;
/// A word only the outside files hold.
const OUTSIDE: &str = "OUTSIDE-ONLY";

/// The contents of every file under `dir`, by name, sorted.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
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

#[test]
fn a_model_racing_a_symlink_swap_never_reads_or_writes_outside() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace.canonicalize().unwrap();
    let out = sandbox.path().join("outside");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("secret.txt"), format!("{OUTSIDE} secret\n")).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/secret.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&out, ws.join("alt")).unwrap();
    let before = snapshot(&out);

    // Turn after turn of reads and writes through `sub` (distinct arguments, so no
    // call is a duplicate the executor would answer from its cache).
    let turns: Vec<Vec<(String, &str, String)>> = (0..TURNS)
        .map(|turn| {
            let reads = (1..=READS_PER_TURN).map(|i| {
                let args = format!(r#"{{"path":"sub/secret.txt","limit":{}}}"#, turn * 100 + i);
                (format!("read_{turn}_{i}"), "file_read", args)
            });
            let writes = (1..=WRITES_PER_TURN).map(|i| {
                let args = format!(r#"{{"path":"sub/w{turn}_{i}.txt","content":"written"}}"#);
                (format!("write_{turn}_{i}"), "file_write", args)
            });
            reads.chain(writes).collect()
        })
        .collect();
    let mut script: Vec<_> = turns
        .iter()
        .map(|calls| {
            let calls: Vec<_> = calls
                .iter()
                .map(|(id, tool, args)| (id.as_str(), *tool, args.as_str()))
                .collect();
            openai::tool_calls(&calls)
        })
        .collect();
    script.push(openai::text("Done."));
    let server = MockServer::start(script).unwrap();

    // The local process: swaps `sub` and `alt` atomically until the run is over,
    // and counts the swaps made while the calls ran (from the server's first answer
    // to the last request).
    let stop = AtomicBool::new(false);
    let (output, (swaps, during_calls)) = std::thread::scope(|scope| {
        let swapper = scope.spawn(|| {
            let (sub, alt) = (ws.join("sub"), ws.join("alt"));
            let (mut swaps, mut calls_began, mut calls_ended) = (0u64, None, None);
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &sub, CWD, &alt, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
                let left = server.remaining();
                if left <= TURNS {
                    calls_began.get_or_insert(swaps);
                }
                if left == 0 {
                    calls_ended.get_or_insert(swaps);
                }
                // Hold each state a while (a count of yields, not a time), so that
                // a call often starts in one state and ends in the other.
                for _ in 0..HOLD_YIELDS {
                    std::thread::yield_now();
                }
            }
            let during = calls_ended.unwrap_or(swaps) - calls_began.unwrap_or(swaps);
            (swaps, during)
        });
        let output = sandbox.run_openai(
            &server.openai_url(),
            &[
                "--output",
                "jsonl",
                "--approve",
                "deny",
                "--max-turns",
                &(TURNS + 1).to_string(),
            ],
            "Read sub/secret.txt again and again, then write notes into sub/.",
        );
        stop.store(true, Ordering::Relaxed);
        (output, swapper.join().unwrap())
    });
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // What the model was sent back: every tool result of both turns.
    let requests = server.requests();
    assert_eq!(requests.len(), TURNS + 1);
    let results: Vec<(String, String)> = requests[TURNS].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let id = m["tool_call_id"].as_str().unwrap_or("").to_owned();
            (id, m["content"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    assert_eq!(results.len(), READS + WRITES);
    let leaked: Vec<_> = results
        .iter()
        .filter(|(_, r)| r.contains(OUTSIDE))
        .collect();
    assert!(
        leaked.is_empty(),
        "outside content reached the model: {leaked:?}"
    );
    assert!(
        !stdout(&output).contains(OUTSIDE),
        "outside content in the event stream"
    );
    assert_eq!(
        snapshot(&out),
        before,
        "a write landed outside the workspace"
    );
    // Every read either read the directory or was refused.
    let reads: Vec<&str> = results
        .iter()
        .filter(|(id, _)| id.starts_with("read_"))
        .map(|(_, r)| r.as_str())
        .collect();
    let inside = reads.iter().filter(|r| r.contains("inside\n")).count();
    let refused = reads
        .iter()
        .filter(|r| r.contains("is outside the workspace"))
        .count();
    assert_eq!(inside + refused, READS, "{reads:?}");
    eprintln!(
        "{swaps} swaps, {during_calls} while the calls ran; reads: {inside} inside, {refused} refused"
    );
    // The race was live: the directory flipped while the calls ran, and some reads
    // found it a directory, some a symlink.
    assert!(during_calls > 0, "{swaps} swaps, none while the calls ran");
    assert!(inside > 0 && refused > 0, "{reads:?}");
}
