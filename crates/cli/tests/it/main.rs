//! The integration tests of `oxydra-cli`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-cli <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

// The symbol ordering file and the data order's linker script `build.rs` writes;
// their tests run here.
#[path = "../../build/data_order.rs"]
mod data_order;
#[path = "../../build/ordering_file.rs"]
mod ordering_file;

mod chat;
mod chat_commands;
mod checkpoints;
mod checkpoints_rewind;
mod checkpoints_settings;
mod config;
mod consent;
mod console_browser;
mod crash_intents;
mod eval;
mod fallback_model;
mod first_byte;
mod first_run_config;
mod first_use;
mod hook_answers;
mod hooks;
mod hooks_trusted_scripts;
mod images;
mod leaks;
mod limits;
#[cfg(feature = "local")]
mod local_exit;
#[cfg(feature = "local")]
mod local_model;
mod logs;
mod mcp;
mod mcp_approvals;
mod mcp_builtin_tools;
mod mcp_http;
mod mcp_inspector;
mod mcp_list_secrets;
mod mcp_media;
mod mcp_serve;
mod memory_cap;
mod native_providers;
mod otel;
mod output;
mod output_schema;
mod peers;
mod piped_text;
mod prompt_too_long;
mod protected_paths;
mod provenance;
mod provider_errors;
mod remote_commands;
mod replay;
mod responses;
mod run;
mod runs_changes;
mod sandbox;
mod sandbox_attacks;
mod sandbox_read_only;
mod serve;
mod serve_approvals;
mod serve_attacks;
mod serve_bounds;
mod serve_postgres;
mod serve_waiting;
mod session_busy;
mod session_meta;
mod sessions;
mod setup;
mod signals;
#[cfg(target_os = "linux")]
mod symlink_race;
mod terminal_text;
mod thinking;
mod trust;
mod typed_ahead;
mod untrusted_config;
