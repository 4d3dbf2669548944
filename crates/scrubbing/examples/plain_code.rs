#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    missing_docs
)]
//! False positives on plain code: scrubs every `.rs` file under the given directories
//! (default: this workspace's `crates/` and the vendored sources of a few crates in
//! `~/.cargo/registry/src`) and counts the lines a redaction touches. Real code holds
//! no secrets, so every such line is a false positive — except in the files that are
//! tests of secret scanning (the scrubbing crate's own, the config crate's secret
//! tests), which are skipped.
//!
//! ```text
//! cargo run -p oxydra-scrubbing --release --example plain_code [-- DIR... [--show]]
//! ```

use std::path::{Path, PathBuf};

use oxydra_scrubbing::scrub;

/// Crates whose vendored sources are measured (the versions in Cargo.lock).
const VENDORED: &[&str] = &[
    "regex-1",
    "serde-1",
    "tokio-1",
    "memchr-2",
    "clap_builder-4",
    "hyper-1",
    "rustls-0",
    "reqwest-0",
    "h2-0",
    "http-1",
    "hyper-util-0",
    "rustls-webpki-0",
    "rustls-pki-types-1",
    "ring-0",
    "aws-lc-rs-1",
    "quinn-proto-0",
    "tungstenite-0",
    "ureq-3",
    "postgres-protocol-0",
    "tokio-postgres-0",
    "cookie-0",
    "rustix-1",
    "nix-0",
    "libc-0",
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files that are tests of secret detection: they hold made-up secrets on purpose.
fn holds_test_secrets(path: &Path) -> bool {
    let p = path.to_string_lossy();
    p.contains("crates/scrubbing/") || p.contains("secret") || p.contains("scrub")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "--show");
    let mut dirs: Vec<PathBuf> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .unwrap();
        dirs.push(workspace.join("crates"));
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .unwrap();
        if let Ok(indexes) = std::fs::read_dir(home.join("registry/src")) {
            for index in indexes.flatten() {
                let mut names: Vec<PathBuf> = std::fs::read_dir(index.path())
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    .collect();
                names.sort();
                for prefix in VENDORED {
                    // The newest version of each.
                    if let Some(dir) = names.iter().rev().find(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                    }) {
                        dirs.push(dir.clone());
                    }
                }
            }
        }
    }
    for dir in &dirs {
        let mut files = Vec::new();
        rs_files(dir, &mut files);
        let (mut lines, mut flagged, mut skipped) = (0usize, 0usize, 0usize);
        let mut files_flagged = 0usize;
        for file in &files {
            if holds_test_secrets(file) {
                skipped += 1;
                continue;
            }
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let out = scrub(&text);
            lines += text.lines().count();
            files_flagged += usize::from(!out.redactions.is_empty());
            let mut last_line = usize::MAX;
            for r in &out.redactions {
                let line = text[..r.range.start].matches('\n').count();
                if line != last_line {
                    flagged += 1;
                    last_line = line;
                    if show {
                        let l = text.lines().nth(line).unwrap_or_default();
                        println!(
                            "FP {}:{}: {} [{}]",
                            file.display(),
                            line + 1,
                            l.trim(),
                            r.kind
                        );
                    }
                }
            }
        }
        println!(
            "{:<40} files {:>5} (skipped {skipped:>3}, flagged {files_flagged:>3}) lines {lines:>7} flagged {flagged:>4} rate {:.5}",
            dir.file_name().unwrap_or_default().to_string_lossy(),
            files.len() - skipped,
            flagged as f64 / lines.max(1) as f64
        );
    }
}
