//! End-to-end tests of the Oxydra workspace, and the harness they share.
//!
//! [`ScriptServer`] is a local HTTP server (axum on `127.0.0.1:0`, on its own thread)
//! that plays scripted provider responses — one [`Reply`] per request, built with the
//! [`openai`] and [`anthropic`] helpers or read from the recorded streams in
//! `tests/fixtures` — and records every request it receives. The tests in `tests/`
//! exercise the library crates together against it; the `oxydra` binary's end-to-end
//! tests (in `crates/cli/tests`) use it too.
//!
//! ```
//! use oxydra_e2e::{ScriptServer, openai};
//!
//! let server = ScriptServer::start(vec![openai::text("Hello!")]).unwrap();
//! assert!(server.openai_url().starts_with("http://127.0.0.1:"));
//! assert_eq!(server.remaining(), 1);
//! ```

pub mod anthropic;
pub mod mcp_servers;
pub mod openai;
mod server;

use std::path::PathBuf;

pub use server::{RecordedRequest, Reply, ScriptServer, SseEvent};

/// The folder of recorded provider streams kept in the repository
/// (`tests/fixtures`), or `OXYDRA_FIXTURES` when set.
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OXYDRA_FIXTURES") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}
