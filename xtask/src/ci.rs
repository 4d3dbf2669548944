//! `cargo xtask ci`: installs what the build needs (`setup`), then runs the checks CI
//! runs, in order, stopping at the first failure. What only the tests need (the test
//! model, the pgvector server, the MCP servers, the test shells) is set up on a thread
//! of its own beside format and clippy, and joined before the first step that runs tests.
//!
//! The steps share one build of the dependencies: every step resolves the same features
//! (`--all-features`, with the dev-dependencies), so a dependency, a build script (the
//! C++ build of llama.cpp above all) and a host crate is compiled once per mode (`check`
//! for clippy and the docs, `build` for the tests and doc tests), never once per step.
//! Cargo resolves the dev-dependencies only when a step selects a target that uses them;
//! the docs step selects the examples for that reason (docs/performance.md, "CI time").

use std::path::Path;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::setup::TestSetup;

/// One step: a name for the report and the cargo arguments.
struct Step {
    name: &'static str,
    args: Vec<&'static str>,
    env: Vec<(&'static str, &'static str)>,
    /// Whether it runs tests, and so needs what `TestSetup::prepare_tests` provides.
    runs_tests: bool,
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
            runs_tests: true,
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
            runs_tests: true,
        }
    };
    vec![
        Step {
            name: "format",
            args: vec!["fmt", "--all", "--check"],
            env: vec![],
            runs_tests: false,
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
            runs_tests: false,
        },
        tests,
        Step {
            name: "doc tests",
            args: vec!["test", "--workspace", "--doc", "--all-features"],
            env: vec![],
            runs_tests: true,
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
            runs_tests: false,
        },
    ]
}

/// The tests' setup, on a thread of its own beside the first steps.
type PendingSetup = JoinHandle<Result<TestSetup, String>>;

fn finish(pending: PendingSetup) -> Result<TestSetup, String> {
    pending
        .join()
        .map_err(|_| "the tests' setup thread panicked".to_owned())?
}

/// Run every step; `Err` names the one that failed.
pub fn run() -> Result<(), String> {
    let root = crate::workspace_root();
    let started = Instant::now();
    TestSetup::prepare_build(&root)?;
    // The rest of the setup (a model download, a database server, npm and pip
    // installs) waits on the network and the disk, not the CPU the build is short of:
    // it runs beside format and clippy and is joined before the first step that runs
    // tests (docs/performance.md, "CI time").
    let mut pending = Some(std::thread::spawn({
        let root = root.clone();
        move || TestSetup::prepare_tests(&root)
    }));
    let mut setup = None;
    let result = run_steps(&root, &mut pending, &mut setup);
    // A step failed before the join: wait for the setup, so that the pgvector server
    // it may start is stopped again when it drops.
    if let Some(pending) = pending.take() {
        drop(finish(pending));
    }
    drop(setup);
    result?;
    eprintln!(
        "==> all CI steps passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn run_steps(
    root: &Path,
    pending: &mut Option<PendingSetup>,
    setup: &mut Option<TestSetup>,
) -> Result<(), String> {
    for step in steps() {
        if step.runs_tests
            && let Some(handle) = pending.take()
        {
            let joined = Instant::now();
            *setup = Some(finish(handle)?);
            eprintln!(
                "==> setup: the tests' setup joined after {:.1} s of waiting",
                joined.elapsed().as_secs_f64()
            );
        }
        let env = setup
            .as_ref()
            .map(|setup| setup.env.as_slice())
            .unwrap_or_default();
        eprintln!("==> {}: cargo {}", step.name, step.args.join(" "));
        let step_started = Instant::now();
        let status = Command::new("cargo")
            .args(&step.args)
            .envs(step.env.iter().copied())
            .envs(env.iter().map(|(key, value)| (key, value)))
            .current_dir(root)
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
    Ok(())
}
