//! `cargo xtask cost-guard [--record] [--no-build] [--oxydra PATH] [--server PATH]
//! [--keep PATH]`: a deterministic guard on the cost of a run (issue 50.3).
//!
//! It runs the 20-turn `file_read` scenario once under callgrind
//! ([`crate::scenario_profile`]) with the **debug** `oxydra` and `scenario_server`
//! that CI's tests use, reads the profile ([`crate::callgrind`]) and compares its total
//! instructions (Ir) with `xtask/cost-baseline.json` ([`crate::cost_baseline`]). A
//! rise over the baseline's tolerance fails, printing the totals and the functions
//! whose self cost grew most; a fall over it passes and asks for a new baseline.
//! `--record` writes the baseline from this run instead.
//!
//! From the same profile it checks that `crates/cli/symbol-order.txt` is not stale
//! ([`crate::symbol_stamp::check`]: the fingerprint of what decides its names, and the
//! share of the run's own functions it names); a stale list fails too, after the cost
//! verdict is printed. `--record` skips that check.
//!
//! Unless `--no-build` (or both `--oxydra` and `--server`) is given, it first builds
//! the binaries as CI's test step does ([`crate::ci::tests_build`]: `cargo test
//! --workspace --all-features --no-run` through clippy-driver). Inside `cargo xtask
//! ci`, after the tests, that build has nothing to compile. Instruction counts depend
//! on how the binary was compiled (through clippy-driver or not; features unify
//! differently under `-p`), so a baseline only holds for binaries built that one way. `--keep PATH` copies the profile there (for
//! `callgrind_annotate`).

use std::path::{Path, PathBuf};

use crate::callgrind;
use crate::cost_baseline::{self, Baseline, Outcome};
use crate::scenario_profile::{self, Names};

/// The baseline, relative to the workspace root.
pub(crate) const BASELINE: &str = "xtask/cost-baseline.json";

/// The tolerance a first `--record` writes (an existing baseline's is kept): the
/// measured spread between runs and build styles is far below it
/// (docs/performance.md, "The cost guard"), and a 5% rise is well over it.
const DEFAULT_TOLERANCE_PERCENT: f64 = 2.0;

/// The command line, parsed.
#[derive(Debug, Default, PartialEq)]
struct Options {
    record: bool,
    build: bool,
    oxydra: Option<PathBuf>,
    server: Option<PathBuf>,
    keep: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        build: true,
        ..Options::default()
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut path = |flag: &str| {
            rest.next()
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| format!("{flag} needs a path"))
        };
        match arg.as_str() {
            "--record" => options.record = true,
            "--no-build" => options.build = false,
            "--oxydra" => options.oxydra = Some(path("--oxydra")?),
            "--server" => options.server = Some(path("--server")?),
            "--keep" => options.keep = Some(path("--keep")?),
            other => {
                return Err(format!(
                    "cost-guard: unknown option {other} (usage: cargo xtask cost-guard \
                     [--record] [--no-build] [--oxydra PATH] [--server PATH] [--keep PATH])"
                ));
            }
        }
    }
    if options.oxydra.is_some() && options.server.is_some() {
        options.build = false;
    }
    Ok(options)
}

/// `cargo xtask cost-guard ARGS`.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = crate::workspace_root();
    if options.build {
        crate::peer_cost::status(&mut crate::ci::tests_build(&root)?)?;
    }
    guard(&root, &options)
}

/// The guard as `cargo xtask ci` runs it, after [`crate::ci::tests_build`]: on the
/// binaries its tests step built.
pub(crate) fn in_ci(root: &Path) -> Result<(), String> {
    guard(
        root,
        &Options {
            build: false,
            ..Options::default()
        },
    )
}

fn guard(root: &Path, options: &Options) -> Result<(), String> {
    let valgrind = scenario_profile::valgrind_version()?;
    let target = crate::bench::target_dir(root, std::env::var_os("CARGO_TARGET_DIR"));
    let oxydra = options
        .oxydra
        .clone()
        .unwrap_or_else(|| target.join("debug/oxydra"));
    let server = options
        .server
        .clone()
        .unwrap_or_else(|| target.join("debug/scenario_server"));
    let scratch = target.join("cost-guard");
    eprintln!(
        "==> cost guard: the 20-turn file_read scenario under callgrind ({})",
        oxydra.display()
    );
    let path = scenario_profile::profile(&oxydra, &server, &scratch, Names::Demangled)?;
    if let Some(keep) = &options.keep {
        std::fs::copy(&path, keep)
            .map_err(|e| format!("copying the profile to {}: {e}", keep.display()))?;
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let profile = callgrind::parse(&String::from_utf8_lossy(&bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = std::fs::remove_dir_all(&scratch);
    let costs = profile.stable_self_costs();
    let baseline_path = root.join(BASELINE);
    let existing = match std::fs::read_to_string(&baseline_path) {
        Ok(text) => Some(
            Baseline::from_json(&text).map_err(|e| format!("{}: {e}", baseline_path.display()))?,
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("{}: {error}", baseline_path.display())),
    };
    if options.record {
        let tolerance = existing
            .as_ref()
            .map_or(DEFAULT_TOLERANCE_PERCENT, |baseline| {
                baseline.tolerance_percent
            });
        let how = format!(
            "cargo xtask cost-guard --record{}: {} and {} (debug; built as CI's tests build \
             them: cargo test --workspace --all-features --no-run through clippy-driver, \
             CARGO_INCREMENTAL={} in its environment), one run of the 20-turn file_read scenario, \
             TOKIO_WORKER_THREADS=2, {valgrind} --tool=callgrind --demangle=yes",
            if options.build {
                ""
            } else {
                " (binaries not rebuilt)"
            },
            oxydra.strip_prefix(root).unwrap_or(&oxydra).display(),
            server.strip_prefix(root).unwrap_or(&server).display(),
            std::env::var("CARGO_INCREMENTAL").unwrap_or_else(|_| "unset".to_owned()),
        );
        let baseline = Baseline::of(
            profile.total,
            &costs,
            tolerance,
            crate::peer_cost::command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            crate::peer_cost::command_line("rustc", &["--version"]),
            how,
            crate::cpu_features::this_machine(),
        );
        std::fs::write(&baseline_path, baseline.to_json())
            .map_err(|e| format!("{}: {e}", baseline_path.display()))?;
        eprintln!(
            "==> cost guard: recorded {} Ir (tolerance ±{tolerance}%) in {}",
            cost_baseline::thousands(profile.total),
            baseline_path.display()
        );
        return Ok(());
    }
    // The symbol order's staleness, from the same profile (no second run).
    let symbols = crate::symbol_stamp::check(root, &profile);
    let cost = compare(existing, &profile, &costs);
    if let Ok(line) = &symbols {
        eprintln!("==> {line}");
    }
    match (cost, symbols) {
        (Ok(()), Ok(_)) => Ok(()),
        (Err(cost), Ok(_)) => Err(cost),
        (Ok(()), Err(symbols)) => Err(symbols),
        (Err(cost), Err(symbols)) => Err(format!("{cost}\n{symbols}")),
    }
}

/// The cost verdict of `profile` against the baseline.
fn compare(
    existing: Option<Baseline>,
    profile: &callgrind::Profile,
    costs: &std::collections::BTreeMap<String, u64>,
) -> Result<(), String> {
    let baseline = existing.ok_or_else(|| {
        format!("{BASELINE} does not exist: record it with `cargo xtask cost-guard --record`")
    })?;
    // Libraries pick SIMD paths by CPUID: on a machine with other features the counts
    // measure other code, and a comparison would fail (or pass) for that alone.
    let here = crate::cpu_features::this_machine();
    if let Some(difference) = (!baseline.cpu_features.is_empty())
        .then(|| crate::cpu_features::difference(&baseline.cpu_features, &here))
        .flatten()
    {
        eprintln!(
            "==> cost guard: not compared: the baseline was recorded on a CPU with other \
             features ({difference}); its {} Ir measure other code paths. Record a \
             baseline on this kind of machine to guard here.",
            cost_baseline::thousands(profile.total)
        );
        return Ok(());
    }
    let comparison = cost_baseline::compare(&baseline, profile.total, costs);
    eprint!("{}", comparison.report());
    eprintln!(
        "(baseline recorded {} with {})",
        baseline.recorded, baseline.rustc
    );
    match comparison.outcome {
        Outcome::Over => Err(format!(
            "cost guard: the scenario's instructions rose {:+.2}% over {BASELINE} (tolerance \
             {}%); find the cause in the functions above, or, for a rise that is meant, \
             re-record with `cargo xtask cost-guard --record` and say why in the commit",
            comparison.change_percent, comparison.tolerance_percent
        )),
        Outcome::Within | Outcome::Under => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn options_parse_and_two_paths_mean_no_build() {
        let options = parse_args(&args(&[])).unwrap();
        assert!(options.build && !options.record);
        let options = parse_args(&args(&["--record", "--oxydra", "/o"])).unwrap();
        assert!(options.record && options.build);
        assert_eq!(options.oxydra, Some(PathBuf::from("/o")));
        let options = parse_args(&args(&["--oxydra", "/o", "--server", "/s"])).unwrap();
        assert!(!options.build);
        assert!(!parse_args(&args(&["--no-build"])).unwrap().build);
    }

    #[test]
    fn a_flag_without_its_path_or_an_unknown_flag_is_named() {
        let error = parse_args(&args(&["--oxydra"])).unwrap_err();
        assert!(error.contains("--oxydra"), "{error}");
        let error = parse_args(&args(&["--keep", ""])).unwrap_err();
        assert!(error.contains("--keep"), "{error}");
        let error = parse_args(&args(&["--fast"])).unwrap_err();
        assert!(error.contains("--fast"), "{error}");
    }

    /// The committed baseline reads, lists the costliest functions first, and has a
    /// tolerance that still catches a 5% rise.
    #[test]
    fn the_committed_baseline_is_readable_and_catches_five_percent() {
        let path = crate::workspace_root().join(BASELINE);
        let text = std::fs::read_to_string(&path).expect("the baseline is committed");
        let baseline = Baseline::from_json(&text).unwrap();
        assert!(
            baseline.tolerance_percent < 5.0,
            "{}",
            baseline.tolerance_percent
        );
        assert!(baseline.functions.len() > 100);
        assert!(
            baseline
                .functions
                .windows(2)
                .all(|pair| pair[0].1 >= pair[1].1)
        );
        let listed: u64 = baseline.functions.iter().map(|(_, cost)| cost).sum();
        assert!(listed <= baseline.total);
        let costs = baseline.functions.iter().cloned().collect();
        let risen = baseline.total + baseline.total / 20;
        let comparison = cost_baseline::compare(&baseline, risen, &costs);
        assert_eq!(comparison.outcome, Outcome::Over);
    }
}
