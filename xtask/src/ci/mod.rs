//! `cargo xtask ci`: installs what the build needs (`setup`), then runs the checks CI
//! runs, in order, stopping at the first failure: the module-cycle check
//! (`scripts/module-cycles.py`: no crate's modules import each other in a circle,
//! docs/architecture.md), format, clippy's lints with warnings denied, the tests
//! (nextest), the doc tests, the docs (all features; then the library crates' default
//! and lean feature lines) and the packaging of every library crate (`cargo package
//! --no-verify`). What only the tests need
//! (the test model, the pgvector server, the MCP servers, the test shells) is set up on
//! a thread of its own beside the first build, and joined before the first step that
//! runs tests. Last, the cost guard (`cargo xtask cost-guard`, `crate::cost_guard`)
//! runs the 20-turn scenario under callgrind with the debug binaries the tests built.
//! The doc tests and the docs start once nextest's build is done and its
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

mod plan;
mod step;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::setup::TestSetup;
use plan::{clippy_driver, steps};
use step::Step;

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
    // Last: on the debug `oxydra` and `scenario_server` the tests built.
    let guarded = Instant::now();
    crate::peer_cost::status(&mut tests_build(&root)?)?;
    crate::cost_guard::in_ci(&root)?;
    eprintln!(
        "==> cost guard passed in {:.1} s",
        guarded.elapsed().as_secs_f64()
    );
    eprintln!(
        "==> all CI steps passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The build of CI's tests step alone (`cargo test --workspace --all-features
/// --no-run` through clippy-driver): it puts in `target/debug` the `oxydra` and
/// `scenario_server` the tests ran, which `cargo xtask cost-guard` measures. After
/// the tests it compiles nothing, but cargo links its outputs into `target/debug`
/// again (the eval step's `-p oxydra-cli` build may have put another `oxydra` there).
/// `CARGO_INCREMENTAL` comes from the environment, as for the tests: changing it
/// would compile the workspace again, and it moves the count by 0.04% at most
/// (docs/performance.md, "The cost guard").
pub(crate) fn tests_build(root: &Path) -> Result<Command, String> {
    let driver = clippy_driver()?;
    let step = Step::new(
        "the tests' build",
        &["test", "--workspace", "--all-features", "--no-run"],
        false,
    )
    .with_clippy(&driver);
    Ok(command(root, &step, &[]))
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
    let mut command = match step.program.strip_prefix("./") {
        Some(in_tree) => Command::new(in_tree_program(
            root,
            in_tree,
            std::env::var_os("CARGO_TARGET_DIR"),
        )),
        None => Command::new(step.program),
    };
    command
        .args(&step.args)
        .envs(step.env.iter().map(|(key, value)| (key, value)))
        .envs(env.iter().map(|(key, value)| (key, value)))
        .current_dir(root);
    command
}

/// A program in the tree (`./target/debug/oxydra`), wherever CI was started from: the
/// root's, and under `target/` the target directory cargo built into (`configured`,
/// `CARGO_TARGET_DIR`), where the tests step and the cost guard find it too.
fn in_tree_program(root: &Path, in_tree: &str, configured: Option<std::ffi::OsString>) -> PathBuf {
    match in_tree.strip_prefix("target/") {
        Some(built) => crate::bench::target_dir(root, configured).join(built),
        None => root.join(in_tree),
    }
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

    /// The eval runs the `oxydra` the tests built: in the target directory cargo
    /// used, as the cost guard finds it; a program elsewhere in the tree is the root's.
    #[test]
    fn a_program_in_the_tree_is_found_where_cargo_built_it() {
        let root = Path::new("/repo");
        assert_eq!(
            in_tree_program(root, "target/debug/oxydra", None),
            PathBuf::from("/repo/target/debug/oxydra")
        );
        assert_eq!(
            in_tree_program(root, "target/debug/oxydra", Some("/cache/t".into())),
            PathBuf::from("/cache/t/debug/oxydra")
        );
        assert_eq!(
            in_tree_program(root, "target/debug/oxydra", Some("out".into())),
            PathBuf::from("/repo/out/debug/oxydra")
        );
        assert_eq!(
            in_tree_program(root, "scripts/x.sh", Some("/cache/t".into())),
            PathBuf::from("/repo/scripts/x.sh")
        );
    }

    /// The cost guard measures the binaries the tests ran: its build has the test
    /// step's selection, features and compiler wrapper, and only builds.
    #[test]
    fn the_cost_guards_build_is_the_test_steps_build() {
        let root = crate::workspace_root();
        let build = tests_build(&root).expect("clippy-driver is installed");
        let args: Vec<String> = build
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let driver = clippy_driver().expect("clippy-driver is installed");
        let tests = steps(&driver)
            .into_iter()
            .find(|step| step.name.starts_with("tests,"))
            .expect("a tests step");
        for arg in ["--workspace", "--all-features"] {
            assert!(tests.args.iter().any(|a| a == arg), "{arg}");
            assert!(args.iter().any(|a| a == arg), "{arg}");
        }
        let wrapper = |args: &[String]| {
            args.windows(2)
                .find(|pair| pair[0] == "--config")
                .map(|pair| pair[1].clone())
        };
        assert!(wrapper(&tests.args).is_some());
        assert_eq!(wrapper(&args), wrapper(&tests.args));
        assert_eq!(args.first().map(String::as_str), Some("test"));
        assert!(args.iter().any(|a| a == "--no-run"));
        let env: Vec<(String, String)> = build
            .get_envs()
            .filter_map(|(key, value)| {
                Some((
                    key.to_string_lossy().into_owned(),
                    value?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        // CARGO_INCREMENTAL is the environment's, as the tests step's is.
        assert!(!env.iter().any(|(key, _)| key == "CARGO_INCREMENTAL"));
        let lints = tests.env.iter().find(|(key, _)| *key == "CLIPPY_ARGS");
        assert!(
            lints
                .is_some_and(|(_, value)| env.contains(&("CLIPPY_ARGS".to_owned(), value.clone())))
        );
    }

    #[test]
    fn a_build_that_fails_never_says_the_tests_run() {
        // A compiler message may hold one of the texts, never the whole line's set.
        let output = b"error: no `Starting` here\nwarning: 3 lints across crates\nerror: could not compile `x`\n";
        let (said, heard) = mpsc::channel();
        forward_stderr(&output[..], Vec::new(), NEXTEST, said);
        assert_eq!(heard.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    }
}
