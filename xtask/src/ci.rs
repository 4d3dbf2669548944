//! `cargo xtask ci`: installs what the build needs (`setup`), then runs the checks CI
//! runs, in order, stopping at the first failure: format, clippy's lints with warnings
//! denied, the tests (nextest), the doc tests and the docs. What only the tests need
//! (the test model, the pgvector server, the MCP servers, the test shells) is set up on
//! a thread of its own beside the first build, and joined before the first step that
//! runs tests.
//!
//! Clippy's lints run inside the steps that compile the workspace's code anyway (the
//! benches', the tests' and the doc tests' builds go through `clippy-driver`, as
//! `cargo clippy` does), so no step checks the workspace only to lint it.
//!
//! The steps share one build of the dependencies: every step resolves the same features
//! (`--all-features`, with the dev-dependencies), so a dependency, a build script (the
//! C++ build of llama.cpp above all) and a host crate is compiled once per mode (`build`
//! for the benches, the tests and the doc tests, `check` for the docs), never once per
//! step. Cargo resolves the dev-dependencies only when a step selects a target that
//! uses them; the docs step selects the examples for that reason (docs/performance.md,
//! "CI time").

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::setup::TestSetup;

/// One step: a name for the report and the cargo arguments.
struct Step {
    name: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// Whether it runs tests, and so needs what `TestSetup::prepare_tests` provides.
    runs_tests: bool,
}

impl Step {
    fn new(name: &'static str, args: &[&str], runs_tests: bool) -> Self {
        Self {
            name,
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            runs_tests,
        }
    }

    /// Compiles the workspace's crates through `clippy-driver` with warnings denied:
    /// what `cargo clippy` does, in a step that builds the code anyway. The wrapper is
    /// given as cargo configuration, not as `RUSTC_WORKSPACE_WRAPPER`, so that the
    /// tests' own processes do not inherit it (the trybuild test runs cargo itself).
    fn with_clippy(mut self, driver: &Path) -> Self {
        let quoted = driver
            .display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('"', "\\\"");
        self.args.push("--config".to_owned());
        self.args
            .push(format!("build.rustc-workspace-wrapper=\"{quoted}\""));
        // clippy-driver reads its lint flags from here, as `cargo clippy -- -D warnings`
        // passes them.
        self.env.push((
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__".to_owned(),
        ));
        self
    }
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false)
}

/// `clippy-driver` of the toolchain the workspace builds with (rust-toolchain.toml).
fn clippy_driver() -> Result<PathBuf, String> {
    let output = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| format!("could not run `rustc --print sysroot`: {error}"))?;
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let driver = Path::new(&sysroot).join("bin").join("clippy-driver");
    if output.status.success() && driver.is_file() {
        Ok(driver)
    } else {
        Err(format!(
            "no clippy-driver in {sysroot}/bin: install clippy (`rustup component add clippy`)"
        ))
    }
}

/// The steps. Clippy's lints run inside the steps that compile the workspace's code
/// (the benches' build, the tests' build, the doc tests), not in a `cargo clippy` of
/// their own: a separate clippy step checked every workspace crate once more (its
/// lib, its unit tests, its integration tests) only to throw the result away
/// (docs/performance.md, "CI time").
fn steps(driver: &Path) -> Vec<Step> {
    let tests = if has_nextest() {
        Step::new(
            "tests, with clippy's lints (nextest)",
            &[
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
                "--failure-output",
                "final",
            ],
            true,
        )
    } else {
        eprintln!("xtask: cargo-nextest not found; running the tests with `cargo test`");
        Step::new(
            "tests, with clippy's lints (cargo test)",
            &[
                "test",
                "--workspace",
                "--all-features",
                "--lib",
                "--bins",
                "--tests",
                "--examples",
            ],
            true,
        )
    };
    vec![
        Step::new("format", &["fmt", "--all", "--check"], false),
        // The benches are the one kind of target the tests' build leaves out; built
        // first, they also fail the run early on a lint in the libraries.
        Step::new(
            "clippy's lints on the benches and the libraries",
            &[
                "test",
                "--workspace",
                "--all-features",
                "--benches",
                "--no-run",
            ],
            false,
        )
        .with_clippy(driver),
        tests.with_clippy(driver),
        // Through clippy-driver too: the workspace's libraries are then the tests'
        // (the wrapper is part of a crate's hash), not compiled again.
        Step::new(
            "doc tests",
            &["test", "--workspace", "--doc", "--all-features"],
            true,
        )
        .with_clippy(driver),
        Step {
            env: vec![("RUSTDOCFLAGS", "-D warnings".to_owned())],
            // `--examples` documents the examples too, and makes cargo resolve the
            // dev-dependencies as the other steps do, so that the host crates (and
            // with them the build script of llama-cpp-sys-2) get the hashes the
            // builds gave them: a feature one of them lacks would build llama.cpp a
            // second time for the docs alone.
            ..Step::new(
                "docs",
                &[
                    "doc",
                    "--workspace",
                    "--no-deps",
                    "--all-features",
                    "--lib",
                    "--bins",
                    "--examples",
                ],
                false,
            )
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
    let driver = clippy_driver()?;
    // The rest of the setup (a model download, a database server, npm and pip
    // installs) waits on the network and the disk, not the CPU the build is short of:
    // it runs beside format and clippy and is joined before the first step that runs
    // tests (docs/performance.md, "CI time").
    let mut pending = Some(std::thread::spawn({
        let root = root.clone();
        move || TestSetup::prepare_tests(&root)
    }));
    let mut setup = None;
    let result = run_steps(&root, steps(&driver), &mut pending, &mut setup);
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
    steps: Vec<Step>,
    pending: &mut Option<PendingSetup>,
    setup: &mut Option<TestSetup>,
) -> Result<(), String> {
    for step in steps {
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
            .envs(step.env.iter().map(|(key, value)| (key, value)))
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
