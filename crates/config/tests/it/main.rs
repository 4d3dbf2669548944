//! The integration tests of `oxydra-config`, one test binary (docs/testing.md).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod docs_keys;
