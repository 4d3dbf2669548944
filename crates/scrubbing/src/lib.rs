//! Credential scrubbing for Oxydra.
//!
//! `oxydra-scrubbing` owns `scrub(text) -> Scrubbed`: keyword redaction of labelled
//! secrets (API keys, tokens, passwords, bearer headers, private keys and well-known
//! key formats) and entropy detection of unlabelled ones. Every tool output passes
//! through it before it reaches the model or the database. It depends on no other
//! Oxydra crate.
