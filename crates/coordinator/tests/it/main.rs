//! The integration tests of `oxydra-coordinator`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-coordinator <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod support;

mod agents;
mod approvals;
mod burst;
mod client;
mod console_login;
mod hooks;
mod http_api;
mod person_api;
mod privileged;
mod run_changes;
mod run_store_conformance;
mod run_trees;
mod runs;
mod serve_bounds;
mod shell_values;
mod web_pages;
