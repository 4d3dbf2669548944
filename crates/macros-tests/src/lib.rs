//! The compile-fail tests of `#[tool]` (`oxydra-macros`): the shapes a tool cannot
//! have are compile errors that say what to write instead. The cases are in
//! `tests/ui` (a source file and the error it must give), run by `trybuild` from
//! `tests/compile_fail.rs`.
//!
//! They live in a crate of their own rather than in `oxydra-macros`: cargo compiles a
//! proc-macro crate's dev-dependencies for the host, so the facade the cases expand
//! against was built twice in every test run. This crate has no code.
//!
//! ```
//! // A tool the macro accepts; the cases in `tests/ui` are the ones it refuses.
//! /// Says hello.
//! #[oxydra::tool(read_only)]
//! async fn hello() -> Result<String, std::convert::Infallible> {
//!     Ok("hello".to_owned())
//! }
//! ```
