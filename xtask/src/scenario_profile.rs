//! One run of the 20-turn `file_read` scenario (`oxydra_test_support::file_read_scenario`,
//! served by its `scenario_server` binary, as `cargo xtask peer-cost` runs it) under
//! valgrind's callgrind: what `cargo xtask cost-guard` and `cargo xtask symbol-order`
//! measure.
//!
//! The run is made as deterministic as a process can be: a fresh server, workspace,
//! database and home directory each time; no provider keys or `RUST_LOG` from the
//! environment; and `TOKIO_WORKER_THREADS=2`, so that the runtime starts the same
//! number of worker threads on a machine with any number of cores. Callgrind counts
//! instructions, which the machine's load does not change.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::peer_cost::server_url;

/// The scenario's prompt (`file_read_scenario::PROMPT`; the model is scripted).
const PROMPT: &str = "Read every note, twenty times, then summarise.";

/// Worker threads of oxydra's runtime during the run, whatever the machine's cores.
const WORKER_THREADS: &str = "2";

/// How callgrind writes function names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    /// Demangled (`--demangle=yes`): what people read.
    Demangled,
    /// As the linker sees them (`--demangle=no`): what a symbol-ordering file lists.
    Mangled,
}

/// Fails with what to install when valgrind is missing; returns its version.
pub(crate) fn valgrind_version() -> Result<String, String> {
    let output = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|error| {
            format!(
                "valgrind could not be started ({error}): install the Debian package \
                 `valgrind` (scripts/install-build-deps.sh does, as root)"
            )
        })?;
    if !output.status.success() {
        return Err(format!("`valgrind --version` failed ({})", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Runs the scenario once with `oxydra` under callgrind against a fresh `server`, in
/// `scratch` (emptied first); returns the path of the profile, inside `scratch`.
pub(crate) fn profile(
    oxydra: &Path,
    server: &Path,
    scratch: &Path,
    names: Names,
) -> Result<PathBuf, String> {
    let out = scratch.join("callgrind.out");
    let log = scratch.join("valgrind.log");
    let demangle = match names {
        Names::Demangled => "--demangle=yes",
        Names::Mangled => "--demangle=no",
    };
    let tool = [
        "--tool=callgrind".to_owned(),
        demangle.to_owned(),
        "--dump-instr=no".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
        format!("--log-file={}", log.display()),
    ];
    // oxydra's own warnings (a sandbox the kernel cannot enforce, say) are shown only
    // when the run fails, with valgrind's log.
    run_scenario(oxydra, server, scratch, &tool, &mut |_| {})
        .map_err(|error| format!("{error}\nvalgrind's log ends:\n{}", tail(&log)))?;
    Ok(out)
}

/// Runs the scenario once with `oxydra` under valgrind with the `tool` arguments,
/// against a fresh `server`, in `scratch` (emptied first). Every line the run writes
/// to its standard error (valgrind's own, unless `tool` sends them elsewhere) is handed
/// to `on_line` as it comes.
pub(crate) fn run_scenario(
    oxydra: &Path,
    server: &Path,
    scratch: &Path,
    tool: &[String],
    on_line: &mut dyn FnMut(&str),
) -> Result<(), String> {
    // Absolute: the run's working directory is `scratch`, where a relative path
    // would name nothing.
    let absolute = |binary: &Path| {
        std::fs::canonicalize(binary)
            .ok()
            .filter(|path| path.is_file())
            .ok_or_else(|| {
                format!(
                    "{} does not exist: build it first (or name another with \
                     --oxydra/--server)",
                    binary.display()
                )
            })
    };
    let oxydra = &absolute(oxydra)?;
    let server = &absolute(server)?;
    let io = |what: &str, path: &Path, error: std::io::Error| {
        format!("{what} {}: {error}", path.display())
    };
    let _ = std::fs::remove_dir_all(scratch);
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(|e| io("creating", &workspace, e))?;
    crate::peer_cost::status(
        Command::new(server)
            .arg("notes")
            .arg(&workspace)
            .stdout(Stdio::null()),
    )?;
    let mut mock = Command::new(server)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| io("starting", server, e))?;
    let mut last_lines = std::collections::VecDeque::new();
    let run = server_url(&mut mock).and_then(|url| {
        let mut child = Command::new("valgrind")
            .args(tool)
            .arg(oxydra)
            .args(["run", "--base-url", &url, "--output", "jsonl"])
            .args(["--max-turns", "25", "--db"])
            .arg(scratch.join("oxydra.db"))
            .arg("--workspace")
            .arg(&workspace)
            .arg(PROMPT)
            .current_dir(scratch)
            .env("HOME", scratch)
            .env("XDG_CONFIG_HOME", scratch)
            .env("XDG_DATA_HOME", scratch)
            .env("TOKIO_WORKER_THREADS", WORKER_THREADS)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("valgrind: {e}"))?;
        if let Some(stderr) = child.stderr.take() {
            // One buffer for every line (a data trace has tens of millions of them),
            // read as bytes: a line that is not UTF-8 is shown with replacements, not
            // taken for a failed run.
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            while matches!(reader.read_until(b'\n', &mut line), Ok(read) if read > 0) {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                on_line(text);
                if !text.starts_with(' ') {
                    if last_lines.len() == 15 {
                        last_lines.pop_front();
                    }
                    last_lines.push_back(text.to_owned());
                }
                line.clear();
            }
        }
        child.wait().map_err(|e| format!("valgrind: {e}"))
    });
    // Closing its standard input ends the server, which then says what it served. Every
    // line is read to the end: a pipe closed after the first would fail the server's
    // next write (EPIPE), and the guard with it.
    drop(mock.stdin.take());
    let served = mock
        .stdout
        .take()
        .map(|stdout| {
            let lines: Vec<String> = BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect();
            lines
                .into_iter()
                .find(|line| line.starts_with("requests"))
                .unwrap_or_default()
        })
        .unwrap_or_default();
    let server_exit = mock.wait().map_err(|e| format!("scenario server: {e}"))?;
    let run = run?;
    if !run.success() || !server_exit.success() {
        let stderr: Vec<String> = last_lines.into_iter().collect();
        return Err(format!(
            "the run under valgrind did not complete the scenario (oxydra: {run}; server: \
             {server_exit}, {served}); its standard error ends:\n{}",
            stderr.join("\n")
        ));
    }
    Ok(())
}

/// The last 15 lines of a file (empty when it cannot be read).
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(15);
    lines.get(start..).unwrap_or_default().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_named_before_anything_runs() {
        let scratch = std::env::temp_dir().join(format!("xtask-profile-{}", std::process::id()));
        let missing = Path::new("/nonexistent/oxydra");
        let error = profile(missing, missing, &scratch, Names::Demangled).unwrap_err();
        assert!(
            error.contains("/nonexistent/oxydra does not exist"),
            "{error}"
        );
        // Nothing was started or written.
        assert!(!scratch.exists());
    }
}
