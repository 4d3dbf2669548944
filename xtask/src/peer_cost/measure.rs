//! Measuring one run: a fresh scenario server, the run under a fresh `xtask measure`,
//! and what each of the two processes reports, put together as a [`Cost`].
//!
//! `xtask measure -- COMMAND…` reads `CLOCK_MONOTONIC` just before it spawns the
//! command, waits for it and reads `getrusage(RUSAGE_CHILDREN)`: CPU (user + system)
//! and peak RSS of that one child, and the wall time. The peak RSS has a floor of the
//! measuring process's own (~2 MiB): the child is spawned with `vfork`, and Linux
//! counts the parent's pages at the `exec`. The scenario server reports, when its
//! standard input closes, the same clock's reading at its first request and its time
//! answering (`timing FIRST ANSWERING`, see the `scenario_server` binary).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use nix::time::{ClockId, clock_gettime};

use super::table::{Cost, overhead_ms};

/// The scenario's model requests: 20 tool turns and the answer's
/// (`oxydra_test_support::file_read_scenario::REQUESTS`).
pub(crate) const REQUESTS: usize = 21;

/// One side of the comparison: a label, what it does, and the command line of a run,
/// where `{url}` stands for the scenario server's OpenAI base URL and `{state}` for a
/// fresh directory of its own.
pub(crate) struct Side {
    pub label: String,
    pub what: String,
    pub command: Vec<String>,
}

/// What `xtask measure` prints about its child.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Measured {
    cpu: f64,
    wall: f64,
    rss_kib: f64,
    /// `CLOCK_MONOTONIC` just before the spawn, nanoseconds.
    spawned_ns: u128,
}

/// What the scenario server prints when it ends.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Served {
    requests: usize,
    /// `CLOCK_MONOTONIC` at the first request's head, nanoseconds.
    first_ns: Option<u128>,
    answering_ns: u128,
}

/// `xtask measure -- COMMAND ARGS…`: runs the command (output discarded) and prints
/// `CPU_SECONDS WALL_SECONDS PEAK_RSS_KIB SPAWNED_NS`; fails with the command's status.
pub fn measure(args: &[String]) -> Result<(), String> {
    let command = match args.split_first() {
        Some((dashes, command)) if dashes == "--" => command,
        _ => args,
    };
    let (program, rest) = command.split_first().ok_or("measure needs a command")?;
    let mut child = Command::new(program);
    child
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let spawned = clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map_err(|e| format!("clock_gettime(CLOCK_MONOTONIC): {e}"))?;
    let start = Instant::now();
    let exit = child.status().map_err(|e| format!("{program}: {e}"))?;
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
    let spawned_ns = Duration::from(spawned).as_nanos();
    println!(
        "{:.6} {:.6} {} {spawned_ns}",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        usage.max_rss()
    );
    Ok(())
}

/// One run of `side` against a fresh scenario server, measured by `xtask measure`.
pub(crate) fn run_once(server: &Path, side: &Side, state: &Path) -> Result<Cost, String> {
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
    let report: Vec<String> = mock
        .stdout
        .take()
        .map(|out| BufReader::new(out).lines().map_while(Result::ok).collect())
        .unwrap_or_default();
    let exit = mock.wait().map_err(|e| format!("scenario server: {e}"))?;
    let measured = result?;
    let served = parse_served(&report);
    if !exit.success() {
        let what = served.map_or_else(
            || exit.to_string(),
            |s| format!("{} of {REQUESTS} requests", s.requests),
        );
        return Err(format!(
            "{}: the run did not complete the scenario ({what})",
            side.label
        ));
    }
    let served = served.ok_or_else(|| {
        format!(
            "{}: the scenario server's report is unreadable: {report:?}",
            side.label
        )
    })?;
    let cost = cost_of(&measured, &served)
        .ok_or_else(|| format!("{}: no first request after the spawn", side.label))?;
    let _ = std::fs::remove_dir_all(state);
    Ok(cost)
}

/// Reads the server's URL, then runs `side` under `xtask measure`.
fn measure_against(mock: &mut Child, side: &Side, state: &Path) -> Result<Measured, String> {
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
        .current_dir(state)
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

/// Reads `measure`'s line: CPU seconds, wall seconds, peak RSS in KiB, the spawn's
/// `CLOCK_MONOTONIC` in nanoseconds.
fn parse_measure(line: &str) -> Option<Measured> {
    let mut fields = line.split_whitespace();
    let mut number = || fields.next()?.parse::<f64>().ok();
    let (cpu, wall, rss_kib) = (number()?, number()?, number()?);
    let spawned_ns = fields.next()?.parse().ok()?;
    fields.next().is_none().then_some(Measured {
        cpu,
        wall,
        rss_kib,
        spawned_ns,
    })
}

/// Reads the server's closing lines: `requests N of M`, then `timing FIRST ANSWERING`
/// (`FIRST` is `-` when no request came).
fn parse_served(lines: &[String]) -> Option<Served> {
    let requests = lines
        .iter()
        .find_map(|line| line.strip_prefix("requests "))?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let timing = lines.iter().find_map(|line| line.strip_prefix("timing "))?;
    let mut fields = timing.split(' ');
    let first_ns = match fields.next()? {
        "-" => None,
        first => Some(first.parse().ok()?),
    };
    let answering_ns = fields.next()?.parse().ok()?;
    fields.next().is_none().then_some(Served {
        requests,
        first_ns,
        answering_ns,
    })
}

/// A run's cost from the two reports; `None` unless a first request came after the
/// spawn.
fn cost_of(measured: &Measured, served: &Served) -> Option<Cost> {
    let startup_ns = served.first_ns?.checked_sub(measured.spawned_ns)?;
    // Nanoseconds to f64: exact below 2^53 ns (104 days).
    let startup_ms = startup_ns as f64 / 1e6;
    let server = served.answering_ns as f64 / 1e9;
    Some(Cost {
        cpu: measured.cpu,
        wall: measured.wall,
        rss_mib: measured.rss_kib / 1024.0,
        startup_ms,
        server,
        overhead_ms: overhead_ms(measured.wall, startup_ms, server, REQUESTS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_measurement_line_reads_back() {
        let measured = parse_measure("0.034000 0.065000 21504 123456789012\n").unwrap();
        assert_eq!(
            measured,
            Measured {
                cpu: 0.034,
                wall: 0.065,
                rss_kib: 21504.0,
                spawned_ns: 123_456_789_012,
            }
        );
    }

    #[test]
    fn a_short_long_or_garbled_measurement_line_is_refused() {
        assert_eq!(parse_measure(""), None);
        assert_eq!(parse_measure("0.1 0.2 300"), None);
        assert_eq!(parse_measure("0.1 0.2 300 4 5"), None);
        assert_eq!(parse_measure("0.1 fast 300 4"), None);
        assert_eq!(parse_measure("0.1 0.2 300 -4"), None);
    }

    #[test]
    fn the_servers_report_reads_back() {
        let served = parse_served(&lines("requests 21 of 21\ntiming 5000000 42000000\n"));
        assert_eq!(
            served,
            Some(Served {
                requests: 21,
                first_ns: Some(5_000_000),
                answering_ns: 42_000_000,
            })
        );
        let none = parse_served(&lines("requests 0 of 21\ntiming - 0"));
        assert_eq!(none.map(|s| s.first_ns), Some(None));
        assert_eq!(parse_served(&lines("requests 21 of 21")), None);
        assert_eq!(parse_served(&lines("timing 1 2")), None);
        assert_eq!(parse_served(&lines("requests 21 of 21\ntiming 1")), None);
        assert_eq!(
            parse_served(&lines("requests 21 of 21\ntiming 1 2 3")),
            None
        );
    }

    #[test]
    fn start_up_is_the_first_request_less_the_spawn_and_the_rest_is_per_request() {
        let measured = Measured {
            cpu: 0.03,
            wall: 0.1,
            rss_kib: 13.0 * 1024.0,
            spawned_ns: 1_000_000_000,
        };
        let served = Served {
            requests: 21,
            first_ns: Some(1_004_000_000),
            answering_ns: 54_000_000,
        };
        let cost = cost_of(&measured, &served).unwrap();
        assert!((cost.startup_ms - 4.0).abs() < 1e-9);
        assert!((cost.server - 0.054).abs() < 1e-12);
        assert!((cost.overhead_ms - 2.0).abs() < 1e-9, "{cost:?}");
        assert!((cost.rss_mib - 13.0).abs() < 1e-12);
        // A first request before the spawn is some other client's: refused.
        let early = Served {
            first_ns: Some(999_000_000),
            ..served
        };
        assert_eq!(cost_of(&measured, &early), None);
        let never = Served {
            first_ns: None,
            ..served
        };
        assert_eq!(cost_of(&measured, &never), None);
    }
}
