//! `cargo xtask ci`: installs what the build needs (`setup`), then runs the checks CI
//! runs, in order, stopping at the first failure: the module-cycle check
//! (`scripts/module-cycles.py`: no crate's modules import each other in a circle,
//! docs/architecture.md), format, clippy's lints with warnings denied, the tests
//! (nextest), the doc tests, the docs (all features; then the library crates' default
//! and lean feature lines) and the packaging of every library crate (`cargo package
//! --no-verify`). What only the tests need
//! (the test model, the pgvector server, the MCP servers, the test shells) is set up on
//! a thread of its own beside the first build, and joined before the first step that
//! runs tests. The doc tests and the docs start once nextest's build is done and its
//! tests run, and run beside them (`run_with_beside`).
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

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::setup::TestSetup;

/// The module-cycle check: the script and its arguments, run from the workspace root.
const MODULE_CYCLES: [&str; 2] = ["python3", "scripts/module-cycles.py"];

/// The library crates whose docs CI builds under their default and their lean
/// (`--no-default-features`) feature lines, beside the all-features docs of the
/// workspace: a feature line that breaks an intra-doc link fails CI, not docs.rs.
/// `oxydra-local` is left out (its lines differ only by the model download, and a
/// new feature line of llama.cpp's build script would rebuild its C++); the CLI is a
/// program, and `oxydra-config` builds the same under every line.
const FEATURE_LINE_DOCS: &[&str] = &[
    "oxydra-types",
    "oxydra-http",
    "oxydra-provider",
    "oxydra-tools",
    "oxydra-scrubbing",
    "oxydra-executor",
    "oxydra-mcp",
    "oxydra-memory",
    "oxydra-runtime",
    "oxydra-coordinator",
    "oxydra-mcp-server",
    "oxydra-postgres",
    "oxydra-macros",
    "oxydra",
];

/// `cargo doc` of [`FEATURE_LINE_DOCS`] with `features` (`[]` for the defaults).
fn feature_line_docs(name: &'static str, features: &[&str]) -> Step {
    let mut args = vec!["doc", "--no-deps", "--lib"];
    args.extend_from_slice(features);
    for krate in FEATURE_LINE_DOCS {
        args.extend(["-p", krate]);
    }
    Step {
        env: vec![("RUSTDOCFLAGS", "-D warnings".to_owned())],
        ..Step::new(name, &args, false).beside_tests()
    }
}

/// One step: a name for the report, the program (cargo, unless said otherwise) and its
/// arguments.
struct Step {
    name: &'static str,
    program: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// Whether it runs tests, and so needs what `TestSetup::prepare_tests` provides.
    runs_tests: bool,
    /// Whether it runs beside the test run: started once the tests' build is done and
    /// the tests run (they leave the target directory's lock free), not after them.
    beside_tests: bool,
    /// Texts that together make the line of the step's stderr that says its build is
    /// done and its tests run (nextest's `Starting N tests across M binaries`): the
    /// steps marked `beside_tests` start then.
    running_line: Option<&'static [&'static str]>,
}

impl Step {
    fn new(name: &'static str, args: &[&str], runs_tests: bool) -> Self {
        Self {
            name,
            program: "cargo",
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            runs_tests,
            beside_tests: false,
            running_line: None,
        }
    }

    /// A step that runs `program` with `args` instead of cargo.
    fn program(name: &'static str, program: &'static str, args: &[&str]) -> Self {
        Self {
            program,
            ..Self::new(name, args, false)
        }
    }

    /// The command line, as the report and a failure show it.
    fn command_line(&self) -> String {
        std::iter::once(self.program)
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs this step beside the test run rather than after it.
    fn beside_tests(mut self) -> Self {
        self.beside_tests = true;
        self
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
        let mut nextest = Step::new(
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
        );
        // Its stderr goes through a pipe (`run_with_beside`); keep the colours a
        // terminal would have had.
        if std::io::stderr().is_terminal() {
            nextest.args.push("--color=always".to_owned());
        }
        Step {
            running_line: Some(&["Starting", " across "]),
            ..nextest
        }
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
    let [script_program, script] = MODULE_CYCLES;
    vec![
        // First: it reads the sources only (well under a second) and needs no build.
        Step::program("module cycles", script_program, &[script]),
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
        //
        // The doc tests and the docs run beside the test run: the tests hold the
        // target directory's lock only while they are built, and while they run
        // they leave part of the CPU idle (waiting on processes, sockets and
        // timeouts), which the docs' checks of every dependency fill.
        Step::new(
            "doc tests",
            &["test", "--workspace", "--doc", "--all-features"],
            true,
        )
        .with_clippy(driver)
        .beside_tests(),
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
            .beside_tests()
        },
        feature_line_docs("docs, default features", &[]),
        feature_line_docs("docs, no default features", &["--no-default-features"]),
        // Every library crate packages as crates.io would take it (cargo packages
        // the workspace's crates that depend on each other against a local overlay of
        // the others); `--no-verify` skips building each package again, the tests
        // built the same sources. The `publish = false` crates are left out.
        Step::new(
            "package",
            &[
                "package",
                "--workspace",
                "--no-verify",
                "--allow-dirty",
                "--exclude",
                "oxydra-test-support",
                "--exclude",
                "oxydra-macros-tests",
                "--exclude",
                "oxydra-e2e",
                "--exclude",
                "xtask",
            ],
            false,
        )
        .beside_tests(),
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
    let build = Step::new(
        "the test binaries' names",
        &["test", "--workspace", "--all-features"],
        false,
    )
    .with_clippy(&driver);
    crate::unprivileged::run(&root, command(&root, &build, &[]))?;
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
    let mut steps = steps.into_iter().peekable();
    while let Some(step) = steps.next() {
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
        match step.running_line {
            Some(marker) => {
                let mut beside = Vec::new();
                while let Some(next) = steps.next_if(|next| next.beside_tests) {
                    beside.push(next);
                }
                run_with_beside(root, &step, marker, &beside, env)?;
            }
            None => run_step(root, &step, env)?,
        }
    }
    Ok(())
}

fn command(root: &Path, step: &Step, env: &[(String, String)]) -> Command {
    eprintln!("==> {}: {}", step.name, step.command_line());
    let mut command = Command::new(step.program);
    command
        .args(&step.args)
        .envs(step.env.iter().map(|(key, value)| (key, value)))
        .envs(env.iter().map(|(key, value)| (key, value)))
        .current_dir(root);
    command
}

/// What a finished step's status says, as the report line or the error.
fn verdict(step: &Step, status: ExitStatus, started: Instant) -> Result<(), String> {
    if !status.success() {
        return Err(format!(
            "step `{}` failed ({status}); run `{}` to see it alone",
            step.name,
            step.command_line()
        ));
    }
    eprintln!(
        "==> {} passed in {:.1} s",
        step.name,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn run_step(root: &Path, step: &Step, env: &[(String, String)]) -> Result<(), String> {
    let started = Instant::now();
    let status = command(root, step, env).status().map_err(|error| {
        format!(
            "step `{}` could not start {}: {error}",
            step.name, step.program
        )
    })?;
    verdict(step, status, started)
}

/// Runs `step` and, once a line of its stderr contains every text of `marker` (its
/// tests are built and running), the `beside` steps one after another while it goes
/// on. A step that fails before the marker (its build) runs none of them; if the
/// marker never comes and the step passes, they run after it. Every failure is
/// reported.
fn run_with_beside(
    root: &Path,
    step: &Step,
    marker: &'static [&'static str],
    beside: &[Step],
    env: &[(String, String)],
) -> Result<(), String> {
    let started = Instant::now();
    let mut child = command(root, step, env)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| {
            format!(
                "step `{}` could not start {}: {error}",
                step.name, step.program
            )
        })?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| format!("step `{}`: no pipe for its stderr", step.name))?;
    let (running, started_running) = mpsc::channel();
    let forwarder =
        std::thread::spawn(move || forward_stderr(stderr, std::io::stderr(), marker, running));
    let mut failures = Vec::new();
    // `Err` is the end of the stderr without the marker: the step has ended.
    let ran_beside = started_running.recv().is_ok();
    if ran_beside {
        failures.extend(run_each(root, beside, env));
    }
    let status = child.wait().map_err(|error| {
        format!(
            "step `{}`: waiting for {}: {error}",
            step.name, step.program
        )
    })?;
    drop(forwarder.join());
    if let Err(failure) = verdict(step, status, started) {
        failures.insert(0, failure);
    } else if !ran_beside {
        failures.extend(run_each(root, beside, env));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Runs every step of `steps`, one after another; returns their failures.
fn run_each(root: &Path, steps: &[Step], env: &[(String, String)]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| run_step(root, step, env).err())
        .collect()
}

/// Copies `from` to `to` line by line; says on `running` when a line contains every
/// text of `marker`.
fn forward_stderr(from: impl Read, mut to: impl Write, marker: &[&str], running: mpsc::Sender<()>) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    let mut said = false;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        drop(to.write_all(&line));
        let text = String::from_utf8_lossy(&line);
        if !said && marker.iter().all(|part| text.contains(part)) {
            said = true;
            // The receiver is gone only when the steps beside have started already.
            let _ = running.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEXTEST: &[&str] = &["Starting", " across "];

    #[test]
    fn the_running_line_is_said_once_and_every_line_is_passed_on() {
        let output = b"   Compiling oxydra v0.1.0\n    Finished `test` profile\n    Starting 3 tests across 2 binaries\n        PASS a\n    Starting again across\n";
        let (said, heard) = mpsc::channel();
        let mut passed = Vec::new();
        forward_stderr(&output[..], &mut passed, NEXTEST, said);
        assert_eq!(passed, output);
        assert_eq!(heard.try_recv(), Ok(()));
        // Once only, and the sender is gone with the stream's end.
        assert_eq!(heard.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    }

    #[test]
    fn a_build_that_fails_never_says_the_tests_run() {
        // A compiler message may hold one of the texts, never the whole line's set.
        let output = b"error: no `Starting` here\nwarning: 3 lints across crates\nerror: could not compile `x`\n";
        let (said, heard) = mpsc::channel();
        forward_stderr(&output[..], Vec::new(), NEXTEST, said);
        assert_eq!(heard.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    }

    #[test]
    fn the_module_cycle_check_runs_first_and_its_script_exists() {
        let steps = steps(Path::new("/usr/bin/clippy-driver"));
        let first = steps.first().expect("CI has steps");
        assert_eq!(first.name, "module cycles");
        assert_eq!(first.command_line(), MODULE_CYCLES.join(" "));
        assert!(!first.runs_tests && !first.beside_tests);
        assert!(
            crate::workspace_root().join(MODULE_CYCLES[1]).is_file(),
            "{} is where the CI step runs it",
            MODULE_CYCLES[1]
        );
        assert!(steps.iter().skip(1).all(|step| step.program == "cargo"));
    }

    /// The package step leaves out exactly the crates that are never published, and
    /// the feature-line docs name only crates of the workspace.
    #[test]
    fn the_package_step_excludes_the_unpublished_crates_and_no_other() {
        let root = crate::workspace_root();
        let mut unpublished = Vec::new();
        let mut names = Vec::new();
        let manifests = std::fs::read_dir(root.join("crates"))
            .expect("crates/ is readable")
            .map(|entry| entry.expect("an entry").path().join("Cargo.toml"))
            .chain([root.join("tests/Cargo.toml"), root.join("xtask/Cargo.toml")]);
        for manifest in manifests {
            let text = std::fs::read_to_string(&manifest).expect("a manifest");
            let name = text
                .lines()
                .find_map(|line| line.strip_prefix("name = \""))
                .and_then(|rest| rest.strip_suffix('"'))
                .expect("a package name")
                .to_owned();
            if text.lines().any(|line| line.trim() == "publish = false") {
                unpublished.push(name.clone());
            }
            names.push(name);
        }
        let steps = steps(Path::new("/usr/bin/clippy-driver"));
        let package = steps
            .iter()
            .find(|step| step.name == "package")
            .expect("a package step");
        let mut excluded: Vec<String> = package
            .args
            .windows(2)
            .filter(|pair| pair[0] == "--exclude")
            .map(|pair| pair[1].clone())
            .collect();
        excluded.sort();
        unpublished.sort();
        assert_eq!(excluded, unpublished);
        for krate in FEATURE_LINE_DOCS {
            assert!(names.iter().any(|name| name == krate), "{krate}");
            assert!(!unpublished.iter().any(|name| name == krate), "{krate}");
        }
    }

    #[test]
    fn only_nextest_announces_and_the_doc_steps_go_beside_it() {
        let steps = steps(Path::new("/usr/bin/clippy-driver"));
        let names = |pick: fn(&Step) -> bool| {
            steps
                .iter()
                .filter(|step| pick(step))
                .map(|step| step.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(|step| step.beside_tests),
            [
                "doc tests",
                "docs",
                "docs, default features",
                "docs, no default features",
                "package"
            ]
        );
        let announcing = names(|step| step.running_line.is_some());
        if has_nextest() {
            assert_eq!(announcing, ["tests, with clippy's lints (nextest)"]);
        } else {
            assert!(announcing.is_empty());
        }
    }
}
