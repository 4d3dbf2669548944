//! The integration tests of `oxydra-mcp`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-mcp <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

mod cancellation;
mod everything;
mod filesystem;
mod http;
mod http_auth;
mod lifecycle;
mod parallel_batch;
