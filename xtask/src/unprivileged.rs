//! The sandbox tests again as an unprivileged user (issue 42: every attack must fail as
//! root *and* as a normal user). CI runs as root, so after the test run `cargo xtask
//! ci` runs the `oxydra-tools` integration tests of the sandbox once more as uid/gid
//! 65534 (`nobody`): the test binary the test run built is found through cargo's JSON
//! messages, copied to a directory that user may enter, and run with the sandbox's
//! test filters. (The CLI's binary-level attack tests run each attack as uid 65534
//! themselves when the tests run as root.) Run as another user, this step has nothing
//! to add and says so.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The user and group the tests run as.
const NOBODY: u32 = 65534;

/// The test filters of the sandbox's tests in `oxydra-tools`' `it` binary.
const FILTERS: [&str; 4] = [
    "sandbox::",
    "sandbox_box::",
    "shell_exec::",
    "auto_loaded::",
];

/// Runs the sandbox tests as `nobody` when this process is root. `build` is the cargo
/// command (with its arguments) that built the tests, here asked again with
/// `--no-run --message-format=json` to name the binary without building anything new.
pub fn run(root: &Path, mut build: Command) -> Result<(), String> {
    let euid = std::fs::metadata("/proc/self")
        .map(|meta| meta.uid())
        .map_err(|err| format!("reading /proc/self: {err}"))?;
    if euid != 0 {
        eprintln!("==> sandbox tests as an unprivileged user: already one (uid {euid})");
        return Ok(());
    }
    let output = build
        .args(["--no-run", "--message-format=json"])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|err| format!("running cargo to find the test binary: {err}"))?;
    if !output.status.success() {
        return Err("cargo could not name the sandbox's test binary".to_owned());
    }
    let binary = tools_test_binary(&String::from_utf8_lossy(&output.stdout))
        .ok_or("cargo named no `it` test binary of oxydra-tools")?;
    let dir = std::env::temp_dir().join(format!("oxydra-unprivileged-{}", std::process::id()));
    let result = run_copy(&binary, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Copies `binary` into `dir` (which `nobody` may enter) and runs its sandbox tests
/// as `nobody`, with `dir` as home.
fn run_copy(binary: &Path, dir: &Path) -> Result<(), String> {
    let io = |what: &str, err: std::io::Error| format!("{what} {}: {err}", dir.display());
    std::fs::create_dir_all(dir).map_err(|err| io("creating", err))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))
        .map_err(|err| io("opening", err))?;
    let copy = dir.join("sandbox-tests");
    std::fs::copy(binary, &copy).map_err(|err| io("copying the test binary into", err))?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
        .map_err(|err| io("opening", err))?;
    eprintln!(
        "==> sandbox tests as an unprivileged user (uid {NOBODY}): {} {}",
        copy.display(),
        FILTERS.join(" ")
    );
    let status = Command::new(&copy)
        .args(FILTERS)
        .env("HOME", dir)
        .env("TMPDIR", dir)
        // The tests read it as a variable of Oxydra's own environment that must not
        // reach a command; cargo sets it for every test process.
        .env("CARGO_MANIFEST_DIR", dir)
        .current_dir(dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .status()
        .map_err(|err| format!("running the sandbox tests as uid {NOBODY}: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the sandbox tests failed as an unprivileged user (uid {NOBODY}): {status}"
        ))
    }
}

/// The executable of `oxydra-tools`' `it` test target in cargo's JSON messages.
fn tools_test_binary(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message.pointer("/reason").and_then(|v| v.as_str()) == Some("compiler-artifact")
                && message.pointer("/target/name").and_then(|v| v.as_str()) == Some("it")
                && message
                    .pointer("/package_id")
                    .and_then(|v| v.as_str())
                    .is_some_and(|id| id.contains("oxydra-tools"))
        })
        .find_map(|message| {
            message
                .pointer("/executable")
                .and_then(|v| v.as_str())
                .map(PathBuf::from)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_it_binary_is_picked_among_the_artifacts() {
        let messages = [
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/cli#oxydra-cli@0.1.0","target":{"name":"it"},"executable":"/t/it-cli"}"#,
            r#"{"reason":"build-finished","success":true}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/tools#oxydra-tools@0.1.0","target":{"name":"oxydra_tools"},"executable":null}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/tools#oxydra-tools@0.1.0","target":{"name":"it"},"executable":"/t/it-tools"}"#,
        ]
        .join("\n");
        assert_eq!(
            tools_test_binary(&messages),
            Some(PathBuf::from("/t/it-tools"))
        );
        assert_eq!(tools_test_binary("not json\n"), None);
    }
}
