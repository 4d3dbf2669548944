//! The integration tests of `oxydra-local`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-local <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod gbnf;
mod grammar_model;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod openmp_spin;
mod prompt_chunks;
mod real_model;
mod small_model;
mod tool_grammar;
