//! Project automation for the Oxydra workspace.
//!
//! - `cargo xtask ci` — what CI runs: first what the build needs (`setup`: build
//!   dependencies, cargo-nextest), then the module-cycle check
//!   (`scripts/module-cycles.py`), formatting, clippy's lints with warnings denied
//!   (inside the builds of the benches, the tests and the doc tests), the tests
//!   (nextest), doc tests and the doc build, while what the tests need (the test model,
//!   the pgvector server, MCP test servers, test shells) is set up beside them. It
//!   stops at the first failing step and names it.
//! - `cargo xtask run [ARGS…]` — the main job on a fresh clone: installs the build
//!   dependencies, fetches the default small model once, then runs `oxydra run ARGS…`.
//! - `cargo xtask bench [FILTER]` — runs every crate's benches and writes the
//!   criterion medians, and the local-model bench's comparison table, into the
//!   generated tables of `docs/performance.md`.
//! - `cargo xtask tasks [--runs N] [--write] [--only NAME] [-- RUN FLAGS]` — plain
//!   one-step workspace tasks run by the `oxydra` binary on a small model, judged by
//!   their outcome (see `tasks/`); `--peer` also runs them against llama-cpp-python's
//!   server on the same model (`peer.rs`, installed by `scripts/install-peer-server.sh`).
//! - `cargo xtask peer-cost [--pairs N] [--peers NAMES]` — the whole-process cost of
//!   `oxydra run` against the Rust agent frameworks' (rig, AutoAgents, ADK-Rust:
//!   `bench/peer-*`) on the 20-turn `file_read` scenario, run in interleaved rounds:
//!   CPU, wall, peak RSS, start-up to the first request and overhead per request with
//!   the scripted server's time taken out; writes the medians into
//!   `docs/performance.md` (`peer_cost/`).
//! - `cargo xtask cost-guard [--record]` — the scenario's instruction count under
//!   callgrind (debug binaries, as CI builds them) against `xtask/cost-baseline.json`;
//!   fails on a rise over its tolerance, naming the functions that grew
//!   (`cost_guard.rs`), and on a stale symbol order (`symbol_stamp.rs`). The last step
//!   of `cargo xtask ci`.
//! - `cargo xtask serve-load [--clients N] [--release]` — `oxydra serve` under N
//!   (default 1,000) concurrent `POST /runs` from a load generator of its own, with a
//!   local provider: the answers' latency distribution, a health probe's meanwhile,
//!   the server's CPU and peak RSS (`serve_load/`).
//! - `cargo xtask symbol-order` — re-records `crates/cli/symbol-order.txt`, the
//!   functions a run of the scenario executes, from the release binary, and its stamp
//!   `crates/cli/symbol-order.stamp`, what CI checks it against (`symbol_order.rs`).

mod bench;
mod callgrind;
mod ci;
mod cost_baseline;

mod cost_guard;
mod cpu_features;
mod data_order;
mod legacy_demangle;
mod peer;
mod peer_cost;
mod run;
mod scenario_profile;
mod serve_load;
mod setup;
mod symbol_coverage;
mod symbol_fingerprint;
mod symbol_order;
mod symbol_stamp;
mod tasks;
mod unprivileged;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::run(),
        Some("bench") => bench::run(args.get(1).map(String::as_str)),
        Some("tasks") => tasks::run(args.get(1..).unwrap_or_default()),
        Some("cost-guard") => cost_guard::run(args.get(1..).unwrap_or_default()),
        Some("symbol-order") => symbol_order::run(args.get(1..).unwrap_or_default()),
        Some("serve-load") => serve_load::run(args.get(1..).unwrap_or_default()),
        Some("peer-cost") => peer_cost::run(args.get(1..).unwrap_or_default()),
        // Internal to `peer-cost`: one measured child process.
        Some("measure") => peer_cost::measure(args.get(1..).unwrap_or_default()),
        Some("run") => {
            return match run::run(args.get(1..).unwrap_or_default()) {
                Ok(code) => code,
                Err(message) => {
                    eprintln!("xtask: {message}");
                    ExitCode::FAILURE
                }
            };
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | run [ARGS…] | bench [FILTER] | tasks [OPTIONS] | peer-cost [--pairs N] [--peers NAMES] [--no-build] [--oxydra PATH] [--server PATH] | cost-guard [--record] [--no-build] [--oxydra PATH] [--server PATH] [--keep PATH] | serve-load [--clients N] [--release] [--no-build] [--oxydra PATH] [--server PATH] [--max-connections N] | symbol-order [--no-build] [--oxydra PATH] [--server PATH] [--debug-profile PATH]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of `xtask/`).
fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or(manifest)
}
