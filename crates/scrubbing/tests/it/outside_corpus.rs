#![allow(clippy::cast_precision_loss, dead_code)]
//! The scrubber on text its authors did not write: the rule tests of gitleaks and
//! detect-secrets (`tests/fixtures/outside/`, provenance and licences in its README).
//! Asserts the targets of issue 31: recall ≥ 0.95, false positives ≤ 0.05 on plain
//! negatives, and no partial redaction. `cargo run --example outside_corpus -- --show`
//! prints every miss.

use crate::judge;

use oxydra_scrubbing::scrub;

#[test]
fn outside_corpus_meets_the_targets() {
    let cases = judge::load(&judge::default_path());
    assert!(
        cases.len() > 6000,
        "corpus truncated: {} cases",
        cases.len()
    );
    let mut report = judge::Report::default();
    for case in &cases {
        let out = scrub(&case.text);
        report.add(case, &judge::judge(case, &out));
    }
    println!("{}", report.summary());
    assert!(
        report.recall.rate() >= 0.95,
        "recall {:.3} below 0.95; first misses {:?}",
        report.recall.rate(),
        &report.misses[..report.misses.len().min(20)]
    );
    assert!(
        report.fp_plain.rate() <= 0.05,
        "false positives on plain negatives {:.3} above 0.05: {:?}",
        report.fp_plain.rate(),
        report.false_positives
    );
    assert_eq!(
        report.partial, 0,
        "partial redactions: {:?}",
        report.partials
    );
}

#[test]
fn the_judge_counts_a_surviving_tail_as_a_miss() {
    assert!(judge::survives("abcdefghij123", "x=[REDACTED]fghij123 y"));
    assert!(!judge::survives("abcdefghij123", "x=[REDACTED] y"));
    assert!(judge::survives("short", "short"));
}
