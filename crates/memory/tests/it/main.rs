//! The integration tests of `oxydra-memory`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-memory <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod append_many;
mod conformance;
mod durability;
mod openai_embedder;
mod stored_parts;
