#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    missing_docs
)]
//! Prints the scrubber's measures on the outside corpus: recall, false positives on
//! all and on plain negatives, partial redactions, and recall by rule family and by
//! syntax.
//!
//! ```text
//! cargo run -p oxydra-scrubbing --release --example outside_corpus [-- CASES.jsonl [--show] [--find TEXT]]
//! ```
//!
//! With `--show`, every miss, false positive and partial redaction of the fit part is
//! printed with its input and output; the held-back part (`judge::case_held_back`) is
//! reported by its numbers only, so that no rule is tuned on its failures. `--find
//! TEXT` prints the fit part's cases whose text holds `TEXT` (any case), whatever
//! their outcome: the way to search a corpus without reading its held-back part.

#[path = "../tests/it/judge.rs"]
#[allow(
    dead_code,
    reason = "the CI tests' own helpers (`measure`, `family_case`)"
)]
mod judge;
#[path = "common/layer.rs"]
mod layer;

use std::path::PathBuf;

use layer::layer;
use oxydra_scrubbing::scrub;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "--show");
    let find = args
        .iter()
        .position(|a| a == "--find")
        .and_then(|at| args.get(at + 1))
        .map(|text| text.to_lowercase());
    let path = args
        .iter()
        .enumerate()
        .find(|(at, a)| {
            !a.starts_with("--") && (*at == 0 || args.get(at - 1).is_none_or(|p| p != "--find"))
        })
        .map_or_else(judge::default_path, |(_, a)| PathBuf::from(a));
    let cases = judge::load(&path);
    let mut report = judge::Report::default();
    let mut fit = judge::Report::default();
    let mut held = judge::Report::default();
    let mut shown = Vec::new();
    // The layers behind the held-back part's plain false positives: counts only, so
    // that no text of a held-back failure is seen.
    let mut held_layers = std::collections::BTreeMap::new();
    for case in &cases {
        let out = scrub(&case.text);
        let verdict = judge::judge(case, &out);
        report.add(case, &verdict);
        let held_back = judge::case_held_back(case);
        if held_back {
            held.add(case, &verdict);
            if case.is_plain_negative() && !out.is_clean() {
                for r in &out.redactions {
                    *held_layers.entry(layer(&r.kind)).or_insert(0usize) += 1;
                }
            }
            continue;
        }
        fit.add(case, &verdict);
        let bad = matches!(
            verdict.outcome,
            judge::Outcome::Missed | judge::Outcome::FalsePositive
        ) || verdict.partial;
        let found = find
            .as_ref()
            .is_some_and(|text| case.text.to_lowercase().contains(text.as_str()));
        if found || (show && bad) {
            let tag = match verdict.outcome {
                judge::Outcome::Missed => "MISS",
                judge::Outcome::FalsePositive if case.is_plain_negative() => "FP-PLAIN",
                judge::Outcome::FalsePositive => "FP",
                _ if verdict.partial => "PARTIAL",
                _ => "FOUND",
            };
            shown.push(format!(
                "{tag} {} [{} / {}]{}\n  in:  {:?}\n  out: {:?}\n  secrets: {:?}",
                case.id,
                case.family,
                case.origin,
                if verdict.partial { " partial" } else { "" },
                case.text,
                out.text,
                case.secrets
            ));
        }
    }
    println!("{} cases from {}\n", cases.len(), path.display());
    println!("{}\n", report.summary());
    for (name, part) in [("fit part", &fit), ("held-back part", &held)] {
        println!("{name} ({} families):", part.by_family.len());
        println!("{}", part.summary());
        for (source, t) in &part.by_source {
            println!("  recall {source:<16} {:>5} {:>7.3}", t.total, t.rate());
        }
        println!();
    }
    println!("held-back plain false positives by layer (redactions): {held_layers:?}\n");
    println!("recall by source:");
    for (name, t) in &report.by_source {
        println!("  {name:<40} {:>5} {:>7.3}", t.total, t.rate());
    }
    println!("recall by syntax (origin):");
    for (name, t) in &report.by_origin {
        println!("  {name:<48} {:>5} {:>7.3}", t.total, t.rate());
    }
    println!("recall by family:");
    for (name, t) in &report.by_family {
        println!("  {name:<28} {:>5} {:>7.3}", t.total, t.rate());
    }
    for line in shown {
        println!("{line}");
    }
}
