//! `cargo xtask peer-cost [--pairs N] [--no-build] [--oxydra PATH] [--server PATH]`:
//! the whole-process cost of `oxydra run` against
//! rig's on the same scenario, written into `docs/performance.md`.
//!
//! The scenario is `oxydra_test_support::file_read_scenario` (20 turns × 8 parallel
//! `file_read` calls, then an answer), served by that crate's `scenario_server` binary,
//! a fresh server for every run. The peer is `bench/peer-rig`, a crate outside the
//! workspace (its own lock file) running rig's agent loop with sequential tools and
//! no persistence. Both are built in release; then `N` pairs run interleaved (the
//! order alternating within pairs) and the table gives the medians.
//!
//! Each run is measured by a fresh `xtask measure` process that spawns it and reads
//! `getrusage(RUSAGE_CHILDREN)` after waiting for it: CPU (user + system) and peak RSS
//! of that one child, and the wall time. The peak RSS has a floor of the measuring
//! process's own (~2 MiB): the child is spawned with `vfork`, and Linux counts the
//! parent's pages at the `exec`. It is never part of `cargo xtask ci`.
//!
//! `--no-build` runs the binaries already in `target/` (e.g. after a build with other
//! flags); `--oxydra` and `--server` name other `oxydra` and scenario-server binaries
//! (the server's speed is not measured, only the two clients are).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};

const START: &str = "<!-- peer-cost-table:start -->";
const END: &str = "<!-- peer-cost-table:end -->";

/// Pairs run when `--pairs` is not given.
const DEFAULT_PAIRS: usize = 15;

/// What one run cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cost {
    /// User + system CPU seconds.
    cpu: f64,
    /// Wall seconds.
    wall: f64,
    /// Peak resident set, MiB.
    rss_mib: f64,
}

/// One side of the comparison: a label and the command line of a run, where
/// `{url}` stands for the scenario server's OpenAI base URL and `{state}` for a fresh
/// directory of its own.
struct Side {
    label: &'static str,
    command: Vec<String>,
}

/// Runs the comparison with the command-line `args` (after `peer-cost`).
pub fn run(args: &[String]) -> Result<(), String> {
    let mut pairs = DEFAULT_PAIRS;
    let mut build = true;
    let mut oxydra_override = None;
    let mut server_override = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--pairs" => {
                pairs = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--pairs needs a number above 0")?;
            }
            "--no-build" => build = false,
            "--oxydra" => {
                oxydra_override = Some(PathBuf::from(rest.next().ok_or("--oxydra needs a path")?));
            }
            "--server" => {
                server_override = Some(PathBuf::from(rest.next().ok_or("--server needs a path")?));
            }
            other => {
                return Err(format!(
                    "unknown option {other} (see xtask/src/peer_cost.rs)"
                ));
            }
        }
    }
    let root = crate::workspace_root();
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    let peer_target = target.join("peer-rig");
    if build {
        build_all(&root, &peer_target)?;
    }
    let oxydra = oxydra_override.unwrap_or_else(|| target.join("release/oxydra"));
    let server = server_override.unwrap_or_else(|| target.join("release/scenario_server"));
    let rig = peer_target.join("release/peer-rig");

    let scratch = target.join("peer-cost");
    let _ = std::fs::remove_dir_all(&scratch);
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(|e| format!("{}: {e}", workspace.display()))?;
    status(Command::new(&server).arg("notes").arg(&workspace))?;
    let workspace = workspace.display().to_string();
    // The prompt of `file_read_scenario::PROMPT` (the model is scripted: any would do).
    let prompt = "Read every note, twenty times, then summarise.".to_owned();
    let sides = [
        Side {
            label: "oxydra run",
            command: vec![
                oxydra.display().to_string(),
                "run".into(),
                "--base-url".into(),
                "{url}".into(),
                "--output".into(),
                "jsonl".into(),
                "--max-turns".into(),
                "25".into(),
                "--db".into(),
                "{state}/oxydra.db".into(),
                "--workspace".into(),
                workspace.clone(),
                prompt.clone(),
            ],
        },
        Side {
            label: "rig",
            command: vec![rig.display().to_string(), "{url}".into(), workspace, prompt],
        },
    ];

    let load_before = load_average();
    let mut costs: [Vec<Cost>; 2] = [Vec::new(), Vec::new()];
    for pair in 0..pairs {
        // Alternate which side goes first, so neither always runs on a warmer cache.
        let order = if pair % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let (Some(side), Some(list)) = (sides.get(index), costs.get_mut(index)) else {
                continue;
            };
            let state = scratch.join(format!("state-{pair}-{index}"));
            let cost = run_once(&server, side, &state)?;
            eprintln!(
                "pair {}/{pairs} {}: CPU {:.3} s, wall {:.3} s, peak RSS {:.1} MiB",
                pair + 1,
                side.label,
                cost.cpu,
                cost.wall,
                cost.rss_mib
            );
            list.push(cost);
        }
    }
    let load_after = load_average();
    let [ours, theirs] = costs;
    let table = render(
        &medians(&ours),
        &medians(&theirs),
        &Context {
            pairs,
            when: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
            load: format!("{load_before} before, {load_after} after"),
        },
    );
    println!("{table}");
    let doc = root.join("docs/performance.md");
    crate::bench::write_table(&doc, START, END, &table)?;
    eprintln!("==> wrote the peer-cost table to {}", doc.display());
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// Builds the three binaries in release: `oxydra`, the scenario server and the peer.
fn build_all(root: &Path, peer_target: &Path) -> Result<(), String> {
    // Built one package at a time: together, cargo would unify their dependencies'
    // features and build an `oxydra` other than the one users get.
    cargo(
        root,
        &["build", "--release", "-p", "oxydra-cli", "--bin", "oxydra"],
    )?;
    cargo(
        root,
        &[
            "build",
            "--release",
            "-p",
            "oxydra-test-support",
            "--bin",
            "scenario_server",
        ],
    )?;
    let peer_manifest = root.join("bench/peer-rig/Cargo.toml");
    cargo(
        root,
        &[
            "build",
            "--release",
            "--locked",
            "--manifest-path",
            &peer_manifest.display().to_string(),
            "--target-dir",
            &peer_target.display().to_string(),
        ],
    )
}

/// `xtask measure -- COMMAND ARGS…`: runs the command (output discarded) and prints
/// `CPU_SECONDS WALL_SECONDS PEAK_RSS_KIB`; fails with the command's status.
pub fn measure(args: &[String]) -> Result<(), String> {
    let command = match args.split_first() {
        Some((dashes, command)) if dashes == "--" => command,
        _ => args,
    };
    let (program, rest) = command.split_first().ok_or("measure needs a command")?;
    let start = Instant::now();
    let exit = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("{program}: {e}"))?;
    let wall = start.elapsed();
    if !exit.success() {
        return Err(format!("{program} failed ({exit})"));
    }
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(|e| format!("getrusage: {e}"))?;
    let seconds = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(tv.tv_sec()).unwrap_or_default())
            + Duration::from_micros(u64::try_from(tv.tv_usec()).unwrap_or_default())
    };
    let cpu = seconds(usage.user_time()) + seconds(usage.system_time());
    println!(
        "{:.6} {:.6} {}",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        usage.max_rss()
    );
    Ok(())
}

/// One run of `side` against a fresh scenario server, measured by `xtask measure`.
fn run_once(server: &Path, side: &Side, state: &Path) -> Result<Cost, String> {
    std::fs::create_dir_all(state).map_err(|e| format!("{}: {e}", state.display()))?;
    let mut mock = Command::new(server)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", server.display()))?;
    let result = measure_against(&mut mock, side, state);
    // Closing its standard input ends the server, which then says what it served.
    drop(mock.stdin.take());
    let served = mock
        .stdout
        .take()
        .map(|out| {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .find(|line| line.starts_with("requests"))
        })
        .unwrap_or_default();
    let exit = mock.wait().map_err(|e| format!("scenario server: {e}"))?;
    let cost = result?;
    if !exit.success() {
        return Err(format!(
            "{}: the run did not complete the scenario ({})",
            side.label,
            served.unwrap_or_else(|| exit.to_string())
        ));
    }
    let _ = std::fs::remove_dir_all(state);
    Ok(cost)
}

/// Reads the server's URL, then runs `side` under `xtask measure`.
fn measure_against(mock: &mut Child, side: &Side, state: &Path) -> Result<Cost, String> {
    let url = server_url(mock)?;
    let url = url.as_str();
    let state_text = state.display().to_string();
    let command: Vec<String> = side
        .command
        .iter()
        .map(|arg| arg.replace("{url}", url).replace("{state}", &state_text))
        .collect();
    let me = std::env::current_exe().map_err(|e| format!("xtask's own path: {e}"))?;
    let output = Command::new(me)
        .arg("measure")
        .arg("--")
        .args(&command)
        .env("HOME", state)
        .env("XDG_CONFIG_HOME", state)
        .env("XDG_DATA_HOME", state)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("xtask measure: {e}"))?;
    if !output.status.success() {
        return Err(format!("{} failed ({})", side.label, output.status));
    }
    parse_measure(&String::from_utf8_lossy(&output.stdout))
        .ok_or_else(|| format!("{}: unreadable measurement", side.label))
}

/// Reads the first line a scenario server prints on its stdout: its base URL.
pub(crate) fn server_url(mock: &mut Child) -> Result<String, String> {
    let out = mock
        .stdout
        .as_mut()
        .ok_or("scenario server has no stdout")?;
    let mut url = String::new();
    // One byte at a time: a buffered reader would keep what follows the line.
    let mut byte = [0u8; 1];
    while !url.ends_with('\n') {
        match std::io::Read::read(out, &mut byte) {
            Ok(1) => {
                let [read] = byte;
                url.push(char::from(read));
            }
            Ok(_) => return Err("scenario server ended before printing its URL".into()),
            Err(e) => return Err(format!("scenario server: {e}")),
        }
    }
    Ok(url.trim().to_owned())
}

/// Reads `measure`'s line: CPU seconds, wall seconds, peak RSS in KiB.
fn parse_measure(line: &str) -> Option<Cost> {
    let mut fields = line.split_whitespace().map(str::parse::<f64>);
    let cpu = fields.next()?.ok()?;
    let wall = fields.next()?.ok()?;
    let rss_kib = fields.next()?.ok()?;
    fields.next().is_none().then_some(Cost {
        cpu,
        wall,
        rss_mib: rss_kib / 1024.0,
    })
}

/// The median of each measure over `costs`.
fn medians(costs: &[Cost]) -> Cost {
    let column = |pick: fn(&Cost) -> f64| crate::tasks::median(costs.iter().map(pick).collect());
    Cost {
        cpu: column(|c| c.cpu),
        wall: column(|c| c.wall),
        rss_mib: column(|c| c.rss_mib),
    }
}

/// What the table's caption says about the measurement.
struct Context {
    pairs: usize,
    when: String,
    commit: String,
    load: String,
}

/// The table: oxydra's medians, rig's, and their ratio, with how they were taken.
fn render(ours: &Cost, theirs: &Cost, context: &Context) -> String {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    format!(
        "Medians of {} interleaved pairs, whole process, measured {} on {} (load average \
         {}).\n\n\
         | | CPU s (user + sys) | wall s | peak RSS MiB |\n\
         |---|---|---|---|\n\
         | oxydra run (streams, persists, scrubs, reads in parallel) | {:.3} | {:.3} | {:.1} |\n\
         | rig 0.44 (no persistence, sequential tools) | {:.3} | {:.3} | {:.1} |\n\
         | ratio | **{:.2}** | {:.2} | **{:.2}** |\n",
        context.pairs,
        context.when,
        context.commit,
        context.load,
        ours.cpu,
        ours.wall,
        ours.rss_mib,
        theirs.cpu,
        theirs.wall,
        theirs.rss_mib,
        ratio(ours.cpu, theirs.cpu),
        ratio(ours.wall, theirs.wall),
        ratio(ours.rss_mib, theirs.rss_mib),
    )
}

/// Runs cargo in the workspace root.
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

    #[test]
    fn a_measurement_line_reads_back_in_mib() {
        let cost = parse_measure("0.034000 0.065000 21504\n").unwrap();
        assert_eq!(
            cost,
            Cost {
                cpu: 0.034,
                wall: 0.065,
                rss_mib: 21.0
            }
        );
    }

    #[test]
    fn a_short_long_or_garbled_measurement_line_is_refused() {
        assert_eq!(parse_measure(""), None);
        assert_eq!(parse_measure("0.1 0.2"), None);
        assert_eq!(parse_measure("0.1 0.2 300 4"), None);
        assert_eq!(parse_measure("0.1 fast 300"), None);
    }

    #[test]
    fn medians_are_taken_per_measure() {
        let costs = [
            Cost {
                cpu: 3.0,
                wall: 1.0,
                rss_mib: 10.0,
            },
            Cost {
                cpu: 1.0,
                wall: 3.0,
                rss_mib: 30.0,
            },
            Cost {
                cpu: 2.0,
                wall: 2.0,
                rss_mib: 20.0,
            },
        ];
        assert_eq!(
            medians(&costs),
            Cost {
                cpu: 2.0,
                wall: 2.0,
                rss_mib: 20.0
            }
        );
    }

    #[test]
    fn the_table_gives_both_sides_and_their_ratio() {
        let ours = Cost {
            cpu: 0.030,
            wall: 0.060,
            rss_mib: 12.0,
        };
        let theirs = Cost {
            cpu: 0.060,
            wall: 0.080,
            rss_mib: 16.0,
        };
        let table = render(
            &ours,
            &theirs,
            &Context {
                pairs: 15,
                when: "2026-11-26 17:00 UTC".into(),
                commit: "abc1234".into(),
                load: "1.5 before, 1.7 after".into(),
            },
        );
        assert!(table.starts_with("Medians of 15 interleaved pairs"));
        assert!(table.contains("| 0.030 | 0.060 | 12.0 |"));
        assert!(table.contains("| 0.060 | 0.080 | 16.0 |"));
        assert!(table.contains("| ratio | **0.50** | 0.75 | **0.75** |"));
        assert!(table.contains("load average 1.5 before, 1.7 after"));
    }

    #[test]
    fn a_zero_peer_gives_no_ratio_rather_than_infinity() {
        let zero = Cost {
            cpu: 0.0,
            wall: 0.0,
            rss_mib: 0.0,
        };
        let table = render(
            &zero,
            &zero,
            &Context {
                pairs: 1,
                when: String::new(),
                commit: String::new(),
                load: String::new(),
            },
        );
        assert!(table.contains("| ratio | **NaN** | NaN | **NaN** |"));
    }
}
