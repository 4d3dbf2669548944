//! What the README's two commands install before they build: the project's own scripts
//! under `scripts/`, run in order, each idempotent (it does nothing when what it
//! installs is already there) and each saying what it installs.
//!
//! - The local model's build dependencies (cmake, a C++ compiler, libclang): both
//!   commands, since both build `oxydra-local`. As root the script installs the Debian
//!   packages it needs; otherwise it names them and stops. For CI (`--ci`) the same
//!   script installs valgrind too, which the cost guard runs the scenario under.
//! - For the tests only: cargo-nextest, the real test model, the PostgreSQL server with
//!   pgvector, the MCP test servers, the official MCP Python SDK (the client that drives
//!   `oxydra mcp serve`), the POSIX shells the shell-quoting tests run, and headless
//!   Chromium with chromedriver for the web console's browser test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable the pgvector tests read the URL of their server from.
const PGVECTOR_URL_VAR: &str = "OXYDRA_TEST_PGVECTOR_URL";

/// Runs `scripts/NAME` with bash; stdout is returned (trimmed), stderr passes through.
pub fn script(root: &Path, name: &str, args: &[&str]) -> Result<String, String> {
    let path = root.join("scripts").join(name);
    let output = Command::new("bash")
        .arg(&path)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("could not start bash for {}: {error}", path.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        if !stdout.is_empty() {
            eprintln!("{stdout}");
        }
        Err(format!(
            "scripts/{name} failed ({}); what it printed above says why",
            output.status
        ))
    }
}

/// Runs `scripts/NAME` for its effect, showing what it said.
fn install(root: &Path, name: &str) -> Result<(), String> {
    let said = script(root, name, &[])?;
    if !said.is_empty() {
        eprintln!("{said}");
    }
    Ok(())
}

/// The local model's build dependencies (both commands need them).
pub fn build_dependencies(root: &Path) -> Result<(), String> {
    install(root, "install-build-deps.sh")
}

/// The real test model's path, fetched once into `target/test-models`.
pub fn test_model(root: &Path) -> Result<PathBuf, String> {
    script(root, "fetch-test-model.sh", &[]).map(PathBuf::from)
}

/// cargo-nextest, installed from crates.io when missing.
fn nextest() -> Result<(), String> {
    let present = Command::new("cargo")
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if present {
        return Ok(());
    }
    eprintln!("==> cargo-nextest missing: installing it from crates.io");
    let status = Command::new("cargo")
        .args(["install", "--locked", "cargo-nextest"])
        .status()
        .map_err(|error| format!("could not start `cargo install cargo-nextest`: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo install --locked cargo-nextest` failed ({status})"
        ))
    }
}

/// What the tests need, and the environment they need it in. Dropping it stops the
/// pgvector server it started.
pub struct TestSetup {
    root: PathBuf,
    /// Variables the test steps run with.
    pub env: Vec<(String, String)>,
    pgvector_started: bool,
}

impl TestSetup {
    /// What every build needs, before the first step: cargo-nextest and the local
    /// model's build dependencies (the C++ build of llama.cpp runs in clippy's step),
    /// with valgrind for the cost guard.
    pub fn prepare_build(root: &Path) -> Result<(), String> {
        eprintln!("==> setup: what the build needs (each step is skipped when done)");
        nextest()?;
        // `--ci`: valgrind too, for the cost guard after the tests.
        let said = script(root, "install-build-deps.sh", &["--ci"])?;
        if !said.is_empty() {
            eprintln!("{said}");
        }
        Ok(())
    }

    /// Installs or starts what only the tests use (see the module docs). Nothing the
    /// build reads: it can run beside the first steps (`ci/mod.rs` joins it before the tests).
    pub fn prepare_tests(root: &Path) -> Result<Self, String> {
        eprintln!("==> setup: what the tests need, beside the build");
        test_model(root)?;
        let mut setup = Self {
            root: root.to_path_buf(),
            env: Vec::new(),
            pgvector_started: false,
        };
        // A URL already in the environment names a server someone else runs.
        if std::env::var_os(PGVECTOR_URL_VAR).is_none() {
            let url = script(root, "start-pgvector-server.sh", &[])?;
            setup.pgvector_started = true;
            setup.env.push((PGVECTOR_URL_VAR.to_owned(), url));
        }
        install(root, "install-mcp-test-servers.sh")?;
        install(root, "install-mcp-python-client.sh")?;
        install(root, "install-test-shells.sh")?;
        install(root, "install-browser.sh")?;
        Ok(setup)
    }
}

impl Drop for TestSetup {
    fn drop(&mut self) {
        if self.pgvector_started {
            // Best effort: a server left running is reused by the next run.
            let _ = script(&self.root, "start-pgvector-server.sh", &["--stop"]);
        }
    }
}
