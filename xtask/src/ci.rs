//! `cargo xtask ci`: installs what the tests need (`setup`), then the checks CI runs, in
//! order, stopping at the first failure.
//!
//! The steps share one build of the dependencies: every step resolves the same features
//! (`--all-features`, with the dev-dependencies), so a dependency, a build script (the
//! C++ build of llama.cpp above all) and a host crate is compiled once per mode (`check`
//! for clippy and the docs, `build` for the tests and doc tests), never once per step.
//! Cargo resolves the dev-dependencies only when a step selects a target that uses them;
//! the docs step selects the examples for that reason (docs/performance.md, "CI time").

use std::process::Command;
use std::time::Instant;

/// One step: a name for the report and the cargo arguments.
struct Step {
    name: &'static str,
    args: Vec<&'static str>,
    env: Vec<(&'static str, &'static str)>,
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false)
}

fn steps() -> Vec<Step> {
    let tests = if has_nextest() {
        Step {
            name: "tests (nextest)",
            args: vec![
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
                "--failure-output",
                "final",
            ],
            env: vec![],
        }
    } else {
        eprintln!("xtask: cargo-nextest not found; running the tests with `cargo test`");
        Step {
            name: "tests (cargo test)",
            args: vec![
                "test",
                "--workspace",
                "--all-features",
                "--lib",
                "--bins",
                "--tests",
            ],
            env: vec![],
        }
    };
    vec![
        Step {
            name: "format",
            args: vec!["fmt", "--all", "--check"],
            env: vec![],
        },
        Step {
            name: "clippy",
            args: vec![
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ],
            env: vec![],
        },
        tests,
        Step {
            name: "doc tests",
            args: vec!["test", "--workspace", "--doc", "--all-features"],
            env: vec![],
        },
        Step {
            name: "docs",
            // `--examples` documents the examples too, and makes cargo resolve the
            // dev-dependencies as the other steps do: without it the host crates of
            // `oxydra-macros`' tests (a proc-macro crate: its dev-dependencies are host
            // crates, rust-lang/cargo#8312) drop out, `libc` loses `extra_traits`, the
            // build script of llama-cpp-sys-2 gets another hash and llama.cpp is built
            // a second time for the docs alone.
            args: vec![
                "doc",
                "--workspace",
                "--no-deps",
                "--all-features",
                "--lib",
                "--bins",
                "--examples",
            ],
            env: vec![("RUSTDOCFLAGS", "-D warnings")],
        },
    ]
}

/// Run every step; `Err` names the one that failed.
pub fn run() -> Result<(), String> {
    let root = crate::workspace_root();
    let started = Instant::now();
    // Stops the pgvector server it started when the steps are done, passed or not.
    let setup = crate::setup::TestSetup::prepare(&root)?;
    for step in steps() {
        eprintln!("==> {}: cargo {}", step.name, step.args.join(" "));
        let step_started = Instant::now();
        let status = Command::new("cargo")
            .args(&step.args)
            .envs(step.env.iter().copied())
            .envs(setup.env.iter().map(|(key, value)| (key, value)))
            .current_dir(&root)
            .status()
            .map_err(|error| format!("step `{}` could not start cargo: {error}", step.name))?;
        if !status.success() {
            return Err(format!(
                "step `{}` failed ({status}); run `cargo {}` to see it alone",
                step.name,
                step.args.join(" ")
            ));
        }
        eprintln!(
            "==> {} passed in {:.1} s",
            step.name,
            step_started.elapsed().as_secs_f64()
        );
    }
    eprintln!(
        "==> all CI steps passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
