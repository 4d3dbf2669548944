//! `crates/cli/symbol-order.stamp`: written by `cargo xtask symbol-order` beside the
//! list, checked by `cargo xtask cost-guard` (the last step of `cargo xtask ci`) to
//! tell, without a release build, whether the list is stale (issue 50.3).
//!
//! It holds the [`Fingerprint`] of what decides the list's names and the
//! [`Coverage`] of the debug scenario's own functions by the list when it was
//! recorded. The check fails, naming the cause and the command that fixes it, when a
//! part of the fingerprint differs, or when the coverage fell more than the stamp's
//! tolerance (in percentage points) below the recorded one.

use std::path::Path;

use serde_json::{Value, json};

use crate::callgrind::Profile;
use crate::symbol_coverage::{self, Coverage};
use crate::symbol_fingerprint::{Fingerprint, PARTS};

/// The list, relative to the workspace root.
pub(crate) const LIST: &str = "crates/cli/symbol-order.txt";

/// The stamp, relative to the workspace root.
pub(crate) const STAMP: &str = "crates/cli/symbol-order.stamp";

/// The tolerance a first recording writes (an existing stamp's is kept): runs of the
/// debug scenario differ by a few functions of several hundred, well under a point
/// (docs/performance.md, "What CI checks of the symbol order").
pub(crate) const DEFAULT_TOLERANCE_POINTS: f64 = 3.0;

/// What fixes any staleness.
const FIX: &str = "re-run `cargo xtask symbol-order` (a release build) and commit \
                   crates/cli/symbol-order.txt with crates/cli/symbol-order.stamp";

/// The stamp's content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stamp {
    pub(crate) recorded: String,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) executed: usize,
    pub(crate) listed: usize,
    pub(crate) tolerance_points: f64,
}

impl Stamp {
    /// The recorded coverage in percent.
    pub(crate) fn percent(&self) -> f64 {
        Coverage {
            executed: self.executed,
            listed: self.listed,
            missing: Vec::new(),
        }
        .percent()
    }

    pub(crate) fn to_json(&self) -> String {
        let value = json!({
            "about": "written by `cargo xtask symbol-order` with symbol-order.txt; checked \
                      by `cargo xtask cost-guard` (docs/performance.md, \"What CI checks of \
                      the symbol order\")",
            "recorded": self.recorded,
            "fingerprint": {
                "dependencies": self.fingerprint.dependencies,
                "features": self.fingerprint.features,
                "release_profile": self.fingerprint.release_profile,
                "toolchain": self.fingerprint.toolchain,
            },
            "coverage": {
                "executed": self.executed,
                "listed": self.listed,
                "percent": (self.percent() * 100.0).round() / 100.0,
                "tolerance_points": self.tolerance_points,
            },
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    pub(crate) fn from_json(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let string = |pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("`{pointer}` is missing or not a string"))
        };
        let count = |pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("`{pointer}` is missing or not a count"))
        };
        let tolerance_points = value
            .pointer("/coverage/tolerance_points")
            .and_then(Value::as_f64)
            .filter(|points| *points >= 0.0)
            .ok_or("`/coverage/tolerance_points` is missing or negative")?;
        Ok(Self {
            recorded: string("/recorded")?,
            fingerprint: Fingerprint {
                dependencies: string("/fingerprint/dependencies")?,
                features: string("/fingerprint/features")?,
                release_profile: string("/fingerprint/release_profile")?,
                toolchain: string("/fingerprint/toolchain")?,
            },
            executed: count("/coverage/executed")?,
            listed: count("/coverage/listed")?,
            tolerance_points,
        })
    }
}

/// `Err` naming every part of `now` that differs from the recorded fingerprint.
pub(crate) fn check_fingerprint(stamp: &Stamp, now: &Fingerprint) -> Result<(), String> {
    let changed: Vec<&str> = PARTS
        .iter()
        .filter(|(key, _)| stamp.fingerprint.part(key) != now.part(key))
        .map(|(_, what)| *what)
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the symbol order is stale: {} changed since it was recorded ({}), so the release \
         binary's names no longer match it: {FIX}",
        changed.join("; "),
        stamp.recorded
    ))
}

/// `Err` when `now` is more than the tolerance below the recorded coverage, naming
/// some of the functions the list misses.
pub(crate) fn check_coverage(stamp: &Stamp, now: &Coverage) -> Result<(), String> {
    let recorded = stamp.percent();
    let floor = recorded - stamp.tolerance_points;
    if now.percent() >= floor {
        return Ok(());
    }
    Err(format!(
        "the symbol order is stale: it names {:.1}% ({} of {}) of our functions the \
         scenario executes, against {recorded:.1}% when it was recorded ({}; tolerance {} \
         points): code on the run's path was renamed, moved or added. Not in it, among \
         others: {}. {FIX}",
        now.percent(),
        now.listed,
        now.executed,
        stamp.recorded,
        stamp.tolerance_points,
        now.missing.join(", ")
    ))
}

/// The whole check, on the committed list and stamp at `root` and the debug
/// scenario's `profile` (demangled): `Ok` with a line saying what was checked, `Err`
/// with every cause found.
pub(crate) fn check(root: &Path, profile: &Profile) -> Result<String, String> {
    let read = |relative: &str| {
        let path = root.join(relative);
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let stamp = Stamp::from_json(&read(STAMP).map_err(|e| format!("{e}: {FIX}"))?)
        .map_err(|e| format!("{STAMP}: {e}"))?;
    let paths = symbol_coverage::listed_paths(&read(LIST)?);
    let coverage = symbol_coverage::coverage(profile, &paths);
    let fingerprint = Fingerprint::now(root)?;
    let errors: Vec<String> = [
        check_fingerprint(&stamp, &fingerprint),
        check_coverage(&stamp, &coverage),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect();
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok(format!(
        "symbol order: the fingerprint matches {STAMP}; the list names {:.1}% ({} of {}) \
         of our functions the scenario executes (recorded {:.1}%, tolerance {} points)",
        coverage.percent(),
        coverage.listed,
        coverage.executed,
        stamp.percent(),
        stamp.tolerance_points
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint() -> Fingerprint {
        Fingerprint {
            dependencies: "1111111111111111".into(),
            features: "2222222222222222".into(),
            release_profile: "3333333333333333".into(),
            toolchain: "4444444444444444".into(),
        }
    }

    fn stamp() -> Stamp {
        Stamp {
            recorded: "2026-11-30 07:00 UTC".into(),
            fingerprint: fingerprint(),
            executed: 1000,
            listed: 600,
            tolerance_points: 3.0,
        }
    }

    #[test]
    fn the_stamp_reads_back_what_was_written() {
        let stamp = stamp();
        assert_eq!(Stamp::from_json(&stamp.to_json()).unwrap(), stamp);
        assert!(stamp.to_json().contains("\"percent\": 60.0"));
        let error = Stamp::from_json("{\"recorded\": \"x\"}").unwrap_err();
        assert!(error.contains("tolerance_points"), "{error}");
        assert!(Stamp::from_json("nope").unwrap_err().contains("not JSON"));
    }

    /// A deliberate change: Cargo.lock resolves another version of a dependency. The
    /// check fails, says what changed and how to fix it.
    #[test]
    fn a_changed_dependency_fails_the_check_naming_cargo_lock() {
        let stamp = stamp();
        assert_eq!(check_fingerprint(&stamp, &fingerprint()), Ok(()));
        let mut now = fingerprint();
        now.dependencies = "5555555555555555".into();
        let error = check_fingerprint(&stamp, &now).unwrap_err();
        assert!(
            error.contains("Cargo.lock's packages for oxydra-cli"),
            "{error}"
        );
        assert!(
            error.contains("re-run `cargo xtask symbol-order`"),
            "{error}"
        );
        assert!(!error.contains("toolchain"), "{error}");
        now.toolchain = "6666666666666666".into();
        now.release_profile = "7777777777777777".into();
        let error = check_fingerprint(&stamp, &now).unwrap_err();
        assert!(error.contains("the toolchain"), "{error}");
        assert!(error.contains("the release profile"), "{error}");
    }

    /// A deliberate change: functions on the run's path renamed, so the list names
    /// fewer of the executed ones. Within the tolerance it passes; beyond, it fails
    /// naming functions the list misses.
    #[test]
    fn coverage_that_falls_beyond_the_tolerance_fails_naming_missing_functions() {
        let stamp = stamp();
        let now = |listed: usize| Coverage {
            executed: 1000,
            listed,
            missing: vec!["oxydra_runtime::renamed_turn".into()],
        };
        assert_eq!(check_coverage(&stamp, &now(600)), Ok(()));
        assert_eq!(check_coverage(&stamp, &now(571)), Ok(()));
        // More functions listed than when recorded is never stale.
        assert_eq!(check_coverage(&stamp, &now(700)), Ok(()));
        let error = check_coverage(&stamp, &now(560)).unwrap_err();
        assert!(error.contains("56.0% (560 of 1000)"), "{error}");
        assert!(error.contains("60.0% when it was recorded"), "{error}");
        assert!(error.contains("oxydra_runtime::renamed_turn"), "{error}");
    }

    /// The committed stamp reads, and its coverage and tolerance make sense.
    #[test]
    fn the_committed_stamp_is_readable() {
        let path = crate::workspace_root().join(STAMP);
        let text = std::fs::read_to_string(&path).expect("the stamp is committed");
        let stamp = Stamp::from_json(&text).unwrap();
        assert!(stamp.executed > 100, "{}", stamp.executed);
        assert!(stamp.listed <= stamp.executed);
        assert!(stamp.tolerance_points > 0.0 && stamp.tolerance_points < 10.0);
    }
}
