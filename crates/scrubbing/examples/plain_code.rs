#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    missing_docs
)]
//! False positives on plain code: scrubs every file with one of the given extensions
//! (`--ext py,js,yaml`; default `rs`) under the given directories (default: this
//! workspace's `crates/` and the vendored sources of a few crates in
//! `~/.cargo/registry/src`) and counts the lines a redaction touches, per directory
//! and extension, and per layer (for a labelled value, the kind of its label). Real
//! code holds no secrets, so every such line is a false positive — except in the files
//! that are tests of secret scanning (the scrubbing crate's own, the config crate's
//! secret tests), which are skipped, and the few lines that are secret-shaped on
//! purpose (a published client secret, a test's fake key), which `--show` lists.
//!
//! ```text
//! cargo run -p oxydra-scrubbing --release --example plain_code [-- DIR... [--ext EXT,…] [--show]]
//! ```

#[path = "common/layer.rs"]
mod layer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use layer::layer;
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

fn source_files(dir: &Path, exts: &[String], out: &mut Vec<PathBuf>) {
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
            source_files(&path, exts, out);
        } else if path
            .extension()
            .is_some_and(|e| exts.iter().any(|x| e == x.as_str()))
        {
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
    let exts: Vec<String> = args
        .iter()
        .position(|a| a == "--ext")
        .and_then(|i| args.get(i + 1))
        .map_or_else(
            || vec!["rs".to_owned()],
            |list| list.split(',').map(str::to_owned).collect(),
        );
    let mut dirs: Vec<PathBuf> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--ext"))
        .map(|(_, a)| PathBuf::from(a))
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
    let mut layers: BTreeMap<String, usize> = BTreeMap::new();
    let (mut all_lines, mut all_flagged) = (0usize, 0usize);
    for dir in &dirs {
        let mut files = Vec::new();
        source_files(dir, &exts, &mut files);
        // Per extension: files, skipped, flagged files, lines, flagged lines.
        let mut by_ext: BTreeMap<String, [usize; 5]> = BTreeMap::new();
        for file in &files {
            let ext = file
                .extension()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let row = by_ext.entry(ext).or_default();
            if holds_test_secrets(file) {
                row[1] += 1;
                continue;
            }
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            row[0] += 1;
            let out = scrub(&text);
            row[3] += text.lines().count();
            row[2] += usize::from(!out.redactions.is_empty());
            let mut last_line = usize::MAX;
            for r in &out.redactions {
                let line = text[..r.range.start].matches('\n').count();
                if line != last_line {
                    row[4] += 1;
                    last_line = line;
                    *layers.entry(layer(&r.kind)).or_default() += 1;
                    if show {
                        let l = text.lines().nth(line).unwrap_or_default();
                        println!(
                            "FP {}:{}: {} [{}] {:?}",
                            file.display(),
                            line + 1,
                            l.trim(),
                            r.kind,
                            &text[r.range.clone()]
                        );
                    }
                }
            }
        }
        for (ext, [files, skipped, files_flagged, lines, flagged]) in &by_ext {
            all_lines += lines;
            all_flagged += flagged;
            println!(
                "{:<32} {ext:<5} files {files:>5} (skipped {skipped:>3}, flagged {files_flagged:>4}) lines {lines:>8} flagged {flagged:>5} rate {:.5}",
                dir.file_name().unwrap_or_default().to_string_lossy(),
                *flagged as f64 / (*lines).max(1) as f64
            );
        }
    }
    println!(
        "all: lines {all_lines} flagged {all_flagged} rate {:.5}",
        all_flagged as f64 / all_lines.max(1) as f64
    );
    println!("lines flagged by layer (first redaction of a line): {layers:?}");
}
