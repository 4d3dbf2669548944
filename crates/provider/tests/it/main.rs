//! The integration tests of `oxydra-provider`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-provider <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod anthropic;
mod default_client;
mod fallback_models;
mod first_byte_timeout;
mod fixtures;
mod gemini;
mod gemini_strict;
mod ollama;
mod openai_compat;
mod parts_documented;
mod parts_refused;
mod parts_wire;
mod reliability;
mod request_shape;
mod response_cap;
mod responses;
mod responses_attacks;
mod responses_round_trip;
mod stream_errors;
mod stream_fallback;
mod tool_choice;
