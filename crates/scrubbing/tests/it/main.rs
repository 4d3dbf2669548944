//! The integration tests of `oxydra-scrubbing`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-scrubbing <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod generated;
mod known_secrets;
// Shared with `examples/outside_corpus.rs`, which uses more of it.
#[allow(dead_code)]
mod judge;

mod adversarial;
mod api;
mod corpus;
mod kingfisher_corpus;
mod labelled_code;
mod negatives;
mod noseyparker_corpus;
mod outside_corpus;
mod outside_findings;
mod plain_code;
mod positives;
mod robustness;
mod rules;
mod secretlint_corpus;
