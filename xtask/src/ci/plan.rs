//! Which steps `cargo xtask ci` runs, in order ([`steps`]): the module-cycle check,
//! format, the benches' and the tests' builds with clippy's lints, the doc tests, the
//! docs under every feature line and the packaging.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::step::Step;

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

/// The eval of the repository's task suite that CI runs: `oxydra eval` against the
/// embedded test model, one run per task, no threshold (it must run end to end; its
/// rates are docs/performance.md's business). Only the tasks tagged `seen` (6 of 30,
/// one to two minutes on 2 cores): the whole suite would add five or more.
const EVAL: &[&str] = &[
    "eval",
    "evals/tasks.toml",
    "--only",
    "seen",
    "--runs",
    "1",
    "--config",
    "evals/embedded.toml",
    "--provider",
    "local",
    "--model",
    "target/test-models/SmolLM2-135M-Instruct.Q4_1.gguf",
];

/// The `oxydra` the tests step built (`cargo test --workspace --all-features`,
/// through clippy-driver), where the cost guard finds it too (`target/` is the
/// target directory cargo used, `CARGO_TARGET_DIR` when set: `ci::in_tree_program`). The eval step runs it
/// as it is: `cargo run -p oxydra-cli` selected one package, so cargo unified other
/// features for the shared dependencies and compiled tokio, reqwest and 45 more
/// crates again (2 min 36 s of a CI run on 2 cores, 2026-11-30).
const TESTS_OXYDRA: &str = "./target/debug/oxydra";

/// The eval step: the binary the tests built, then [`EVAL`]; it needs the test
/// model the tests' setup fetched.
fn eval_step() -> Step {
    let mut step = Step::program(
        "eval of the task suite (embedded model, k = 1, tag `seen`)",
        TESTS_OXYDRA,
        EVAL,
    );
    step.runs_tests = true;
    step
}

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

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false)
}

/// `clippy-driver` of the toolchain the workspace builds with (rust-toolchain.toml).
pub(super) fn clippy_driver() -> Result<PathBuf, String> {
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
pub(super) fn steps(driver: &Path) -> Vec<Step> {
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
        // The lean line of the library guide: the facade with `runtime` alone (no
        // built-in tools, so none of their crates) must build; rustdoc checks it.
        Step {
            env: vec![("RUSTDOCFLAGS", "-D warnings".to_owned())],
            ..Step::new(
                "docs, the lean line",
                &[
                    "doc",
                    "--no-deps",
                    "--lib",
                    "-p",
                    "oxydra",
                    "--no-default-features",
                    "--features",
                    "runtime",
                ],
                false,
            )
            .beside_tests()
        },
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
        // Last: it needs the binary and the test model, and its runs keep both cores.
        eval_step(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Between them every step is cargo's; the eval runs the binary the tests built.
        let middle = steps.get(1..steps.len() - 1).expect("CI has steps");
        assert!(middle.iter().all(|step| step.program == "cargo"));
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
    fn the_eval_step_runs_the_tests_binary_on_the_suite_file_with_the_fetched_model() {
        let steps = steps(Path::new("/usr/bin/clippy-driver"));
        let eval = steps.last().expect("CI has steps");
        assert!(eval.name.starts_with("eval"), "{}", eval.name);
        assert!(eval.runs_tests && !eval.beside_tests);
        assert_eq!(eval.program, TESTS_OXYDRA);
        let line = eval.command_line();
        assert!(!line.contains("cargo"), "compiles nothing: {line}");
        assert!(!line.contains("--threshold"), "{line}");
        let root = crate::workspace_root();
        assert!(root.join("evals/tasks.toml").is_file());
        assert!(root.join("evals/embedded.toml").is_file());
        // The tests step builds `oxydra` into `target/debug` with every feature.
        let tests = steps
            .iter()
            .find(|step| step.running_line.is_some())
            .expect("a tests step");
        assert!(tests.args.iter().any(|arg| arg == "--workspace"));
        assert!(tests.args.iter().any(|arg| arg == "--all-features"));
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
                "docs, the lean line",
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
