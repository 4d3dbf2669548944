//! What the workspace's tests share, in one dev-dependency:
//!
//! - the whole-process cost scenario ([`file_read_scenario`]: 20 turns of 8 parallel
//!   `file_read` calls), and its `scenario_server` binary, which serves it to another
//!   process;
//! - the recorded provider streams in `tests/fixtures` ([`fixtures_dir`], [`fixture`],
//!   [`fixture_text`]; `OXYDRA_FIXTURES` points elsewhere);
//! - [`MockServer`], a real local HTTP server standing in for a provider: scripted
//!   [`Reply`]s in order (SSE streams, JSON bodies, any status with headers, bodies
//!   delivered in N-byte pieces, held until the test [`Release`]s them, held for ever,
//!   or generated without end), every request recorded ([`RecordedRequest`]: method,
//!   path, headers, body), hit, connection and byte counters, when the first request
//!   arrived and how long answering took ([`ServeTimes`]); optionally strict
//!   about requests as a llama.cpp-based server is
//!   ([`MockServerBuilder::strict_openai`], [`validate_openai_request`]);
//! - the checks the real APIs apply to images and documents in requests
//!   ([`strict_parts`]), used by the strict mocks of every provider;
//! - the scripted model turns in the OpenAI ([`openai`]) and Anthropic ([`anthropic`])
//!   streaming formats, built as plain JSON;
//! - the OpenAI Responses API ([`responses`]): scripted streamed turns and a mock as
//!   strict as OpenAI about what it refuses ([`responses::strict_server`]);
//! - where the real MCP test servers are installed ([`mcp_servers`]);
//! - where the real test model is ([`test_model`]), and copies of it with metadata
//!   of a test's choosing ([`gguf_metadata`]).
//!
//! It depends on none of our crates, so any crate's tests can use it without a cycle.
//!
//! ```
//! use oxydra_test_support::{MockServer, Reply, openai};
//!
//! let server = MockServer::start(vec![
//!     Reply::json(429, "{}").header("retry-after", "0"),
//!     openai::text("Hello!"),
//! ])
//! .unwrap();
//! assert!(server.openai_url().starts_with("http://127.0.0.1:"));
//! assert_eq!(server.remaining(), 2);
//! ```

pub mod anthropic;
pub mod file_read_scenario;
mod fixtures;
pub mod gguf_metadata;
pub mod mcp_servers;
pub mod openai;
#[cfg(target_os = "linux")]
pub mod processes;
mod reply;
mod request;
pub mod responses;
mod serve_timing;
mod server;
mod sse;
mod strict_anthropic;
mod strict_openai;
pub mod strict_parts;
pub mod test_model;

pub use fixtures::{fixture, fixture_text, fixtures_dir};
pub use reply::{Release, Reply};
pub use request::RecordedRequest;
pub use serve_timing::{ServeTimes, monotonic_now};
pub use server::{MockServer, MockServerBuilder};
pub use sse::SseEvent;
pub use strict_anthropic::{
    IssuedThinking, MAX_CACHE_BREAKPOINTS, issued_thinking, validate_anthropic_request,
};
pub use strict_openai::{STRICT_REFUSAL, validate_openai_request};
