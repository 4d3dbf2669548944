//! `cargo xtask symbol-order [--no-build] [--oxydra PATH] [--server PATH]`: records
//! which functions of the `oxydra` binary a run executes into
//! `crates/cli/symbol-order.txt` (lld's `--symbol-ordering-file`; see
//! `crates/cli/build.rs` and docs/performance.md, "Against rig").
//!
//! It builds the release `oxydra` and `scenario_server` (one package at a time, as
//! `cargo install` and `cargo xtask peer-cost` build them) unless told not to, runs
//! the 20-turn `file_read` scenario once under callgrind with mangled names
//! ([`crate::scenario_profile`]), and writes, sorted, the names of the functions of
//! that binary which the profile gives a cost of their own (callgrind starts one with
//! `fn=`; functions seen only as callees elsewhere are left out, as are addresses
//! without a symbol). Rebuild the release binary afterwards. CI cannot tell whether
//! the list is stale without a release build of its own, which it cannot afford: the
//! list is re-recorded by hand (docs/performance.md says when).

use std::path::{Path, PathBuf};

use crate::callgrind::{self, Profile};
use crate::scenario_profile::{self, Names};

/// The list, relative to the workspace root.
const LIST: &str = "crates/cli/symbol-order.txt";

/// `cargo xtask symbol-order ARGS`.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut build = true;
    let mut oxydra = None;
    let mut server = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut path = |flag: &str| {
            rest.next()
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| format!("{flag} needs a path"))
        };
        match arg.as_str() {
            "--no-build" => build = false,
            "--oxydra" => oxydra = Some(path("--oxydra")?),
            "--server" => server = Some(path("--server")?),
            other => {
                return Err(format!(
                    "symbol-order: unknown option {other} (usage: cargo xtask symbol-order \
                     [--no-build] [--oxydra PATH] [--server PATH])"
                ));
            }
        }
    }
    scenario_profile::valgrind_version()?;
    let root = crate::workspace_root();
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    if build && oxydra.is_none() {
        crate::peer_cost::cargo(
            &root,
            &["build", "--release", "-p", "oxydra-cli", "--bin", "oxydra"],
        )?;
    }
    if build && server.is_none() {
        crate::peer_cost::cargo(
            &root,
            &[
                "build",
                "--release",
                "-p",
                "oxydra-test-support",
                "--bin",
                "scenario_server",
            ],
        )?;
    }
    let oxydra = oxydra.unwrap_or_else(|| target.join("release/oxydra"));
    let server = server.unwrap_or_else(|| target.join("release/scenario_server"));
    let scratch = target.join("symbol-order");
    let path = scenario_profile::profile(&oxydra, &server, &scratch, Names::Mangled)?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let profile = callgrind::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    let functions = executed_functions(&profile, &oxydra);
    if functions.is_empty() {
        return Err(format!(
            "no function of {} in the profile: is it the binary that ran?",
            oxydra.display()
        ));
    }
    let list = root.join(LIST);
    let mut text = functions.join("\n");
    text.push('\n');
    std::fs::write(&list, text).map_err(|e| format!("{}: {e}", list.display()))?;
    eprintln!(
        "==> {} functions written to {LIST}; rebuild the release binary to use them",
        functions.len()
    );
    Ok(())
}

/// The names, sorted and each once, of the functions of `binary` that `profile` gives
/// a cost of their own, leaving out addresses that stand for a name.
fn executed_functions(profile: &Profile, binary: &Path) -> Vec<String> {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let binary = real(binary);
    let mut names: Vec<String> = profile
        .functions
        .keys()
        .filter(|function| !function.name.starts_with("0x"))
        .filter(|function| real(Path::new(&function.object)) == binary)
        .map(|function| function.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_binarys_own_named_functions_are_listed_once_each() {
        let text = "\
events: Ir
ob=(1) /opt/app/oxydra
fn=(1) _ZN6oxydra4main17h0123456789abcdefE
1 10
cfn=(2) _ZN6oxydra6callee17h0123456789abcdefE
calls=1 0
2 50
fn=(3) 0x0000000000401000
1 3
ob=(2) /lib/libc.so.6
fn=(4) memcpy
1 20
ob=(1)
fn=(5) _ZN6oxydra3aaa17h0123456789abcdefE
1 1
fn=(1)
3 4
";
        let profile = callgrind::parse(text).unwrap();
        let names = executed_functions(&profile, Path::new("/opt/app/oxydra"));
        // The callee has no `fn=` of its own here: it is not listed.
        assert_eq!(
            names,
            [
                "_ZN6oxydra3aaa17h0123456789abcdefE",
                "_ZN6oxydra4main17h0123456789abcdefE"
            ]
        );
        assert!(executed_functions(&profile, Path::new("/other")).is_empty());
    }
}
