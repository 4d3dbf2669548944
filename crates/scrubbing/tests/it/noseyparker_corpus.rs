#![allow(clippy::cast_precision_loss)]
//! The scrubber on a second outside corpus: the examples and negative examples of Nosey
//! Parker's rules (`tests/fixtures/noseyparker/`, provenance and licence in its
//! README), a corpus none of the scrubber's rules were fitted to when it was added.
//! Split like the first (`judge::case_held_back`); the bounds below are the levels
//! measured, so they catch a regression. Held back, recall meets issue 46.4's goal
//! (≥ 0.95) but partial redactions and plain false positives do not: docs/scrubbing.md,
//! "A second outside corpus".
//! `cargo run --example outside_corpus -- tests/fixtures/noseyparker/cases.jsonl --show`
//! prints the fit part's failures.

use crate::judge;

fn measure(keep: impl Fn(&judge::Case) -> bool) -> judge::Report {
    judge::measure("tests/fixtures/noseyparker/cases.jsonl", 501, keep)
}

#[test]
fn the_whole_corpus_holds_its_measured_level() {
    let report = measure(|_| true);
    println!("{}", report.summary());
    // Measured 0.946 (317 / 335) of the secrets that are not placeholders.
    assert!(report.recall_real.rate() >= 0.94, "{:?}", report.misses);
    assert!(report.partial <= 1, "{:?}", report.partials);
    // Measured 4 / 50.
    assert!(report.fp_plain.hits <= 4, "{:?}", report.false_positives);
}

#[test]
fn the_held_back_part_holds_its_measured_level() {
    let report = measure(judge::case_held_back);
    // The split holds a real share of the corpus.
    assert!(report.recall.total > 80, "{}", report.recall.total);
    assert!(report.by_family.len() > 20, "{}", report.by_family.len());
    println!("{}", report.summary());
    // Measured 0.967 (87 / 90) of the secrets that are not placeholders, one partial
    // redaction and 2 / 9 plain false positives; not tuned, since it is held back.
    assert!(report.recall_real.rate() >= 0.95, "{:?}", report.misses);
    assert!(report.partial <= 1, "{:?}", report.partials);
    assert!(report.fp_plain.hits <= 2, "{:?}", report.false_positives);
}

#[test]
fn its_split_keeps_the_families_looked_at_in_the_fit_part() {
    let case = |family: &str| judge::family_case("noseyparker", family);
    // `aws`, `pyx` and `microsoft_teams` hash into the held-back third but were
    // looked at.
    for family in ["aws", "pyx", "microsoft_teams"] {
        assert!(judge::held_back(family), "{family}");
        assert!(!judge::case_held_back(&case(family)), "{family}");
    }
    assert!(judge::case_held_back(&case("github")));
    assert!(!judge::case_held_back(&case("slack")));
}
