//! The integration tests of `oxydra-runtime`, one test binary (docs/testing.md): each
//! module was a test binary of its own. One module:
//! `cargo nextest run -p oxydra-runtime <module>::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

mod common;

mod agent_tool;
mod anthropic_thinking;
mod attached_parts;
mod budgets_and_cancellation;
mod checkpoints;
mod clean_resume_logs;
mod compact;
mod context_window;
mod count_cancellation;
mod count_mode;
mod deferred_approvals;
mod estimate_gating;
mod eval;
mod fallback_models;
mod honest_timeouts;
mod hooks;
mod http_providers;
mod huge_history;
mod lazy_encoder;
mod leaks;
mod memory;
mod person_time;
mod prompt_sources;
mod prompt_too_long;
mod responses_memory;
mod resume;
mod session_lease;
mod session_meta;
mod structured_output;
mod tool_choice;
mod tool_parts;
mod tool_result_cap;
mod turn_loop;
mod typed_approvals;
mod used_budget;
