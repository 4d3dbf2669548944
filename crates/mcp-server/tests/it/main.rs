//! The integration tests of `oxydra-mcp-server`, one test binary: the crate as a
//! library user sees it, a coordinator of their own served over an in-memory stream
//! and over HTTP to an MCP client.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod duplex;
mod http;
