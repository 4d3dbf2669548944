//! The integration tests of `oxydra-executor`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-executor <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

mod bad_input;
#[cfg(feature = "command-hooks")]
mod command_hooks;
mod concurrency;
mod consent;
mod dedupe;
mod deferred_consent;
mod hooks;
mod intents;
mod ordering_rules;
mod provenance;
mod rules;
