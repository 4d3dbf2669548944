//! `cargo xtask symbol-order [--no-build] [--oxydra PATH] [--server PATH]
//! [--debug-profile PATH]`: records which functions of the `oxydra` binary a run
//! executes into `crates/cli/symbol-order.txt` (lld's `--symbol-ordering-file`; see
//! `crates/cli/build.rs` and docs/performance.md, "Against rig"), and beside it
//! `crates/cli/symbol-order.stamp`, what CI checks the list against
//! ([`crate::symbol_stamp`]).
//!
//! It builds the release `oxydra` and `scenario_server` (one package at a time, as
//! `cargo install` and `cargo xtask peer-cost` build them) unless told not to, runs
//! the 20-turn `file_read` scenario three times under callgrind with mangled names
//! ([`crate::scenario_profile`]), and writes, sorted, the names of the functions of
//! that binary which any of the profiles gives a cost of its own (callgrind starts one with
//! `fn=`; functions seen only as callees elsewhere are left out, as are addresses
//! without a symbol). It then runs the scenario three more times under lackey and
//! writes the read-only data sections the runs read to `crates/cli/data-order.txt`
//! ([`crate::data_order`]). Rebuild the release binary afterwards.
//!
//! The stamp holds the fingerprint of what decides the names
//! ([`crate::symbol_fingerprint`]) and how much of the **debug** scenario's own
//! functions the list names ([`crate::symbol_coverage`]), from the profile of the
//! debug binaries CI's tests build (built as [`crate::ci::tests_build`] does unless
//! `--no-build`), or from a profile kept by `cargo xtask cost-guard --keep PATH`
//! (`--debug-profile PATH`).

use std::path::{Path, PathBuf};

use crate::callgrind::{self, Profile};
use crate::scenario_profile::{self, Names};
use crate::symbol_coverage;
use crate::symbol_fingerprint::Fingerprint;
use crate::symbol_stamp::{DEFAULT_TOLERANCE_POINTS, LIST, STAMP, Stamp};

/// How many runs of the scenario the list is the union of: which instances of a
/// generic function a run executes varies from run to run (two recordings of the same
/// binary named different `tokio::runtime::task::raw::dealloc` instances, as the
/// runtime happened to drop one future type or another), and an instance missing from
/// the list puts 64 KB of cold code around it in the run's pages.
const RECORDED_RUNS: usize = 3;

/// `cargo xtask symbol-order ARGS`.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut build = true;
    let mut oxydra = None;
    let mut server = None;
    let mut debug_profile = None;
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
            "--debug-profile" => debug_profile = Some(path("--debug-profile")?),
            other => {
                return Err(format!(
                    "symbol-order: unknown option {other} (usage: cargo xtask symbol-order \
                     [--no-build] [--oxydra PATH] [--server PATH] [--debug-profile PATH])"
                ));
            }
        }
    }
    scenario_profile::valgrind_version()?;
    let root = crate::workspace_root();
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    if build && oxydra.is_none() {
        crate::peer_cost::build_bin(&root, "oxydra-cli", "oxydra", true)?;
    }
    if build && server.is_none() {
        crate::peer_cost::build_bin(&root, "oxydra-test-support", "scenario_server", true)?;
    }
    let oxydra = oxydra.unwrap_or_else(|| target.join("release/oxydra"));
    let server = server.unwrap_or_else(|| target.join("release/scenario_server"));
    let mut executed = std::collections::BTreeSet::new();
    for run in 1..=RECORDED_RUNS {
        let scratch = target.join(format!("symbol-order-{run}"));
        let path = scenario_profile::profile(&oxydra, &server, &scratch, Names::Mangled)?;
        let profile = read_profile(&path)?;
        let _ = std::fs::remove_dir_all(&scratch);
        executed.extend(executed_functions(&profile, &oxydra));
    }
    let functions: Vec<String> = executed.into_iter().collect();
    if functions.is_empty() {
        return Err(format!(
            "no function of {} in the profile: is it the binary that ran?",
            oxydra.display()
        ));
    }
    // The read-only data the run reads, from one more run under lackey.
    let link_map = crate::data_order::link_map(&target)?;
    let data = crate::data_order::record(
        &oxydra,
        &server,
        &target.join("symbol-order-data"),
        &link_map,
        RECORDED_RUNS,
    )?;
    let list = root.join(LIST);
    let mut text = functions.join("\n");
    text.push('\n');
    let debug = match debug_profile {
        Some(path) => read_profile(&path)?,
        None => {
            if build {
                crate::peer_cost::status(&mut crate::ci::tests_build(&root)?)?;
            }
            let scratch = target.join("symbol-order-debug");
            let path = scenario_profile::profile(
                &target.join("debug/oxydra"),
                &target.join("debug/scenario_server"),
                &scratch,
                Names::Demangled,
            )?;
            let profile = read_profile(&path)?;
            let _ = std::fs::remove_dir_all(&scratch);
            profile
        }
    };
    let stamp = stamp(&root, &text, &debug)?;
    std::fs::write(&list, text).map_err(|e| format!("{}: {e}", list.display()))?;
    let data_list = root.join(crate::data_order::LIST);
    let mut data_text = data.join("\n");
    data_text.push('\n');
    std::fs::write(&data_list, data_text).map_err(|e| format!("{}: {e}", data_list.display()))?;
    let stamp_path = root.join(STAMP);
    std::fs::write(&stamp_path, stamp.to_json())
        .map_err(|e| format!("{}: {e}", stamp_path.display()))?;
    eprintln!(
        "==> {} functions written to {LIST}; they name {:.1}% ({} of {}) of our functions \
         the debug scenario executes ({STAMP}); {} read-only data sections to {}; rebuild \
         the release binary to use them",
        functions.len(),
        stamp.percent(),
        stamp.listed,
        stamp.executed,
        data.len(),
        crate::data_order::LIST
    );
    Ok(())
}

/// Reads a callgrind profile.
fn read_profile(path: &Path) -> Result<Profile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    callgrind::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The stamp of a new `list`: the fingerprint now, the coverage of the debug
/// profile's own functions by the list, the committed stamp's tolerance (or the
/// default).
fn stamp(root: &Path, list: &str, debug: &Profile) -> Result<Stamp, String> {
    let coverage = symbol_coverage::coverage(debug, &symbol_coverage::listed_paths(list));
    if coverage.executed == 0 {
        return Err(
            "the debug profile holds no function of our crates: was it made with \
             --demangle=yes (`cargo xtask cost-guard --keep PATH`)?"
                .into(),
        );
    }
    let tolerance_points = std::fs::read_to_string(root.join(STAMP))
        .ok()
        .and_then(|text| Stamp::from_json(&text).ok())
        .map_or(DEFAULT_TOLERANCE_POINTS, |stamp| stamp.tolerance_points);
    Ok(Stamp {
        recorded: crate::peer_cost::command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        fingerprint: Fingerprint::now(root)?,
        executed: coverage.executed,
        listed: coverage.listed,
        tolerance_points,
    })
}

/// The names, sorted and each once, of the functions of `binary` that `profile` gives
/// a cost of their own, leaving out addresses that stand for a name and callgrind's
/// names that are no symbol (`(below main)`); a recursion's deeper levels
/// (`name'2`) count as the function itself.
fn executed_functions(profile: &Profile, binary: &Path) -> Vec<String> {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let binary = real(binary);
    let mut names: Vec<String> = profile
        .functions
        .keys()
        .filter(|function| !function.name.starts_with("0x") && !function.name.starts_with('('))
        .filter(|function| real(Path::new(&function.object)) == binary)
        .map(|function| {
            let name = &function.name;
            name.split_once('\'')
                .map_or(name.as_str(), |(symbol, _)| symbol)
                .to_owned()
        })
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
fn=(6) _ZN6oxydra3aaa17h0123456789abcdefE'2
1 1
fn=(7) (below main)
1 1
fn=(1)
3 4
";
        let profile = callgrind::parse(text).unwrap();
        let names = executed_functions(&profile, Path::new("/opt/app/oxydra"));
        // The callee has no `fn=` of its own here: it is not listed. A recursion's
        // deeper level is its function; `(below main)` is no symbol.
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
