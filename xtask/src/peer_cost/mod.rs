//! `cargo xtask peer-cost [--pairs N] [--peers NAMES] [--no-build] [--oxydra PATH]
//! [--server PATH]`: the whole-process cost of `oxydra run` against the Rust agent
//! frameworks' on the same scenario, written into `docs/performance.md`.
//!
//! The scenario is `oxydra_test_support::file_read_scenario` (20 turns × 8 parallel
//! `file_read` calls, then an answer), served by that crate's `scenario_server` binary,
//! a fresh server for every run, streamed or whole as each request asks. The peers
//! ([`peers::PEERS`]: rig, AutoAgents, ADK-Rust) are crates under `bench/` outside the
//! workspace (each its own lock file), each running its framework's own agent loop with
//! the same `file_read` tool (`bench/peer-file-read`) and nothing persisted. All are
//! built in release; then `N` rounds run every side once, interleaved (the order
//! rotating by one each round, so no side always runs on a warmer cache), and the
//! table gives the medians ([`table`]): CPU, wall, peak RSS, start-up to the first
//! request, the server's time answering, and the client's overhead per request with
//! the server's time taken out ([`mod@measure`] says how each is taken). It is never part
//! of `cargo xtask ci`.
//!
//! `--pairs N` (the name from when there were two sides) sets the rounds; `--peers
//! rig,adk` measures only those peers; `--no-build` runs the binaries already in
//! `target/` (e.g. after a build with other flags); `--oxydra` and `--server` name
//! other `oxydra` and scenario-server binaries.

mod measure;
mod peers;
mod table;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use measure::measure;
pub(crate) use measure::server_url;
use measure::{REQUESTS, Side, run_once};
use table::{Context, Cost, Row, medians, render};

const START: &str = "<!-- peer-cost-table:start -->";
const END: &str = "<!-- peer-cost-table:end -->";

/// Rounds run when `--pairs` is not given.
const DEFAULT_ROUNDS: usize = 15;

/// What the command line asks for.
struct Options {
    rounds: usize,
    build: bool,
    peers: Option<String>,
    oxydra: Option<PathBuf>,
    server: Option<PathBuf>,
}

/// Reads the options after `peer-cost`.
fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        rounds: DEFAULT_ROUNDS,
        build: true,
        peers: None,
        oxydra: None,
        server: None,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--pairs" | "--rounds" => {
                options.rounds = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--pairs needs a number above 0")?;
            }
            "--no-build" => options.build = false,
            "--peers" => {
                options.peers = Some(rest.next().ok_or("--peers needs names")?.clone());
            }
            "--oxydra" => {
                options.oxydra = Some(PathBuf::from(rest.next().ok_or("--oxydra needs a path")?));
            }
            "--server" => {
                options.server = Some(PathBuf::from(rest.next().ok_or("--server needs a path")?));
            }
            other => {
                return Err(format!(
                    "unknown option {other} (see xtask/src/peer_cost/mod.rs)"
                ));
            }
        }
    }
    Ok(options)
}

/// The order of the sides in round `round`: all of them, rotated by one more each round.
fn round_order(round: usize, sides: usize) -> impl Iterator<Item = usize> {
    (0..sides).map(move |i| (round + i) % sides)
}

/// Runs the comparison with the command-line `args` (after `peer-cost`).
pub fn run(args: &[String]) -> Result<(), String> {
    let options = options(args)?;
    let peers = peers::select(options.peers.as_deref())?;
    let root = crate::workspace_root();
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    if options.build {
        peers::build_all(&root, &target, &peers)?;
    }
    let oxydra = options
        .oxydra
        .unwrap_or_else(|| target.join("release/oxydra"));
    let server = options
        .server
        .unwrap_or_else(|| target.join("release/scenario_server"));
    for binary in std::iter::once(oxydra.clone())
        .chain(std::iter::once(server.clone()))
        .chain(peers.iter().map(|peer| peer.binary(&target)))
    {
        if !binary.is_file() {
            return Err(format!(
                "{} does not exist (build it, or run without --no-build)",
                binary.display()
            ));
        }
    }

    let scratch = target.join("peer-cost");
    let _ = std::fs::remove_dir_all(&scratch);
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(|e| format!("{}: {e}", workspace.display()))?;
    status(Command::new(&server).arg("notes").arg(&workspace))?;
    let workspace = workspace.display().to_string();
    // The prompt of `file_read_scenario::PROMPT` (the model is scripted: any would do).
    let prompt = "Read every note, twenty times, then summarise.";
    let sides: Vec<Side> = std::iter::once(peers::oxydra_side(&oxydra, &workspace, prompt))
        .chain(
            peers
                .iter()
                .map(|peer| peer.side(&target, &workspace, prompt)),
        )
        .collect();

    let load_before = load_average();
    let mut costs: Vec<Vec<Cost>> = vec![Vec::new(); sides.len()];
    for round in 0..options.rounds {
        for index in round_order(round, sides.len()) {
            let (Some(side), Some(list)) = (sides.get(index), costs.get_mut(index)) else {
                continue;
            };
            let state = scratch.join(format!("state-{round}-{index}"));
            let cost = run_once(&server, side, &state)?;
            eprintln!(
                "round {}/{} {}: CPU {:.3} s, wall {:.3} s, peak RSS {:.1} MiB, start-up \
                 {:.1} ms, server {:.3} s, overhead {:.2} ms per request",
                round + 1,
                options.rounds,
                side.label,
                cost.cpu,
                cost.wall,
                cost.rss_mib,
                cost.startup_ms,
                cost.server,
                cost.overhead_ms
            );
            list.push(cost);
        }
    }
    let load_after = load_average();
    let mut rows = sides.iter().zip(&costs).map(|(side, costs)| Row {
        label: side.label.clone(),
        what: side.what.clone(),
        median: medians(costs),
    });
    let ours = rows.next().ok_or("no oxydra side")?;
    let theirs: Vec<Row> = rows.collect();
    let table = render(
        &ours,
        &theirs,
        &Context {
            rounds: options.rounds,
            when: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
            load: format!("{load_before} before, {load_after} after"),
            requests: REQUESTS,
        },
    );
    println!("{table}");
    let doc = root.join("docs/performance.md");
    crate::bench::write_table(&doc, START, END, &table)?;
    eprintln!("==> wrote the peer-cost table to {}", doc.display());
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// Runs cargo in the workspace root.
/// Builds binary `bin` of `package` alone (together with another package, cargo would
/// unify their dependencies' features and build an `oxydra` other than the one users
/// get), in release or debug.
pub(crate) fn build_bin(
    root: &Path,
    package: &str,
    bin: &str,
    release: bool,
) -> Result<(), String> {
    let mut args = vec!["build", "-p", package, "--bin", bin];
    if release {
        args.push("--release");
    }
    cargo(root, &args)
}

pub(crate) fn cargo(root: &Path, args: &[&str]) -> Result<(), String> {
    eprintln!("==> cargo {}", args.join(" "));
    status(Command::new("cargo").args(args).current_dir(root))
}

/// Runs a command to completion; fails unless it succeeds.
pub(crate) fn status(command: &mut Command) -> Result<(), String> {
    let program = PathBuf::from(command.get_program());
    let exit = command
        .status()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if exit.success() {
        Ok(())
    } else {
        Err(format!("{} failed ({exit})", program.display()))
    }
}

/// The first line a command prints, or `?` when it cannot run.
pub(crate) fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// The 1-minute load average, from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn every_side_runs_once_a_round_and_the_first_rotates() {
        let rounds: Vec<Vec<usize>> = (0..4).map(|r| round_order(r, 3).collect()).collect();
        assert_eq!(rounds, [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]);
    }

    #[test]
    fn options_read_back_and_bad_ones_are_named() {
        let read = options(&args("--pairs 7 --peers rig,adk --no-build --oxydra /o")).unwrap();
        assert_eq!(read.rounds, 7);
        assert!(!read.build);
        assert_eq!(read.peers.as_deref(), Some("rig,adk"));
        assert_eq!(read.oxydra, Some(PathBuf::from("/o")));
        assert_eq!(options(&[]).unwrap().rounds, DEFAULT_ROUNDS);
        for bad in ["--pairs 0", "--pairs", "--peers", "--oxydra"] {
            assert!(options(&args(bad)).is_err(), "{bad}");
        }
        let unknown = options(&args("--fast")).err().unwrap();
        assert!(unknown.contains("--fast"), "{unknown}");
    }
}
