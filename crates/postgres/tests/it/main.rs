//! The integration tests of `oxydra-postgres`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-postgres <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

mod approvals;
mod budgets_across_takeover;
mod database;
mod memory_conformance;
mod pgvector_backend;
mod pgvector_ranking;
mod run_store_conformance;
mod run_trees;
mod shared_queue;
mod stored_parts;
