//! The cost guard's baseline (`xtask/cost-baseline.json`) and the comparison of a new
//! profile with it ([`compare`]).
//!
//! The baseline holds the scenario's total Ir, the tolerance in percent, the self Ir
//! of the [`LISTED`] costliest functions (by [`crate::callgrind::stable_name`]), and
//! when, with which rustc and how it was recorded.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

/// How many of the costliest functions the baseline lists.
pub(crate) const LISTED: usize = 300;

/// How many of the functions that grew most a report names.
pub(crate) const REPORTED: usize = 15;

/// The committed baseline.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Baseline {
    /// When it was recorded (UTC).
    pub(crate) recorded: String,
    /// `rustc --version` of the build it was recorded from.
    pub(crate) rustc: String,
    /// How it was recorded: the build, the command, valgrind's version.
    pub(crate) how: String,
    /// A rise of the total by more than this many percent fails the guard.
    pub(crate) tolerance_percent: f64,
    /// The scenario's total Ir.
    pub(crate) total: u64,
    /// The costliest functions' self Ir, costliest first.
    pub(crate) functions: Vec<(String, u64)>,
    /// The CPU features of the machine it was recorded on
    /// ([`crate::cpu_features`]); empty when not recorded.
    pub(crate) cpu_features: Vec<String>,
}

impl Baseline {
    /// A baseline of `costs` (self Ir by stable name) and `total`: the [`LISTED`]
    /// costliest functions, costliest first (ties by name, so that the file is stable).
    pub(crate) fn of(
        total: u64,
        costs: &BTreeMap<String, u64>,
        tolerance_percent: f64,
        recorded: String,
        rustc: String,
        how: String,
        cpu_features: Vec<String>,
    ) -> Self {
        let mut functions: Vec<(String, u64)> = costs
            .iter()
            .filter(|(_, cost)| **cost > 0)
            .map(|(name, cost)| (name.clone(), *cost))
            .collect();
        functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        functions.truncate(LISTED);
        Self {
            recorded,
            rustc,
            how,
            tolerance_percent,
            total,
            functions,
            cpu_features,
        }
    }

    /// The JSON text written to the file (pretty, with a final newline).
    pub(crate) fn to_json(&self) -> String {
        let functions: Vec<Value> = self
            .functions
            .iter()
            .map(|(name, cost)| json!({ "name": name, "self_ir": cost }))
            .collect();
        let value = json!({
            "recorded": self.recorded,
            "rustc": self.rustc,
            "how": self.how,
            "tolerance_percent": self.tolerance_percent,
            "total_ir": self.total,
            "cpu_features": self.cpu_features,
            "functions": functions,
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads the file's text; the error names the field at fault.
    pub(crate) fn from_json(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
        let string = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` is missing or not a string"))
        };
        let tolerance_percent = value
            .get("tolerance_percent")
            .and_then(Value::as_f64)
            .filter(|tolerance| tolerance.is_finite() && *tolerance >= 0.0)
            .ok_or("`tolerance_percent` is missing or not a number of 0 or more")?;
        let total = value
            .get("total_ir")
            .and_then(Value::as_u64)
            .filter(|total| *total > 0)
            .ok_or("`total_ir` is missing or not a count above 0")?;
        let list = value
            .get("functions")
            .and_then(Value::as_array)
            .ok_or("`functions` is missing or not a list")?;
        let mut functions = Vec::with_capacity(list.len());
        for (index, entry) in list.iter().enumerate() {
            let name = entry.get("name").and_then(Value::as_str);
            let cost = entry.get("self_ir").and_then(Value::as_u64);
            match (name, cost) {
                (Some(name), Some(cost)) => functions.push((name.to_owned(), cost)),
                _ => {
                    return Err(format!(
                        "`functions[{index}]` needs a `name` string and a `self_ir` count"
                    ));
                }
            }
        }
        let cpu_features = match value.get("cpu_features") {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .and_then(|list| {
                    list.iter()
                        .map(|flag| flag.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or("`cpu_features` is not a list of strings")?,
        };
        Ok(Self {
            recorded: string("recorded")?,
            rustc: string("rustc")?,
            how: string("how")?,
            tolerance_percent,
            total,
            functions,
            cpu_features,
        })
    }
}

/// What a new profile says against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Within the tolerance either way.
    Within,
    /// Higher than the baseline by more than the tolerance: the guard fails.
    Over,
    /// Lower by more than the tolerance: it passes, and the baseline should be
    /// re-recorded so that the gain is kept.
    Under,
}

/// A function whose self cost grew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Growth {
    pub(crate) name: String,
    /// Its self Ir in the baseline; `None` when the baseline does not list it (new, or
    /// under the baseline's cheapest listed function before).
    pub(crate) before: Option<u64>,
    pub(crate) after: u64,
    /// After − before; for an unlisted function after − the cheapest listed cost
    /// (the least it can have grown by).
    pub(crate) growth: u64,
}

/// The comparison of a profile with the baseline.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    pub(crate) outcome: Outcome,
    pub(crate) before: u64,
    pub(crate) after: u64,
    /// (after − before) / before, in percent.
    pub(crate) change_percent: f64,
    pub(crate) tolerance_percent: f64,
    /// The functions that grew most, most first, at most [`REPORTED`].
    pub(crate) grown: Vec<Growth>,
}

/// Compares a profile's `total` and self costs (by stable name) with `baseline`.
pub(crate) fn compare(
    baseline: &Baseline,
    total: u64,
    costs: &BTreeMap<String, u64>,
) -> Comparison {
    let before = baseline.total;
    let change_percent = if before == 0 {
        0.0
    } else {
        (total as f64 - before as f64) / before as f64 * 100.0
    };
    let outcome = if change_percent > baseline.tolerance_percent {
        Outcome::Over
    } else if change_percent < -baseline.tolerance_percent {
        Outcome::Under
    } else {
        Outcome::Within
    };
    let listed: BTreeMap<&str, u64> = baseline
        .functions
        .iter()
        .map(|(name, cost)| (name.as_str(), *cost))
        .collect();
    let floor = baseline
        .functions
        .iter()
        .map(|(_, cost)| *cost)
        .min()
        .unwrap_or(0);
    let mut grown: Vec<Growth> = costs
        .iter()
        .filter_map(|(name, &after)| {
            let before = listed.get(name.as_str()).copied();
            let growth = after.checked_sub(before.unwrap_or(floor))?;
            (growth > 0).then(|| Growth {
                name: name.clone(),
                before,
                after,
                growth,
            })
        })
        .collect();
    grown.sort_by(|a, b| b.growth.cmp(&a.growth).then_with(|| a.name.cmp(&b.name)));
    grown.truncate(REPORTED);
    Comparison {
        outcome,
        before,
        after: total,
        change_percent,
        tolerance_percent: baseline.tolerance_percent,
        grown,
    }
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

impl Comparison {
    /// The report: the totals, the verdict, and (when the total rose) the functions
    /// that grew most.
    pub(crate) fn report(&self) -> String {
        let mut out = format!(
            "total Ir: baseline {}, now {} ({:+.2}%, tolerance ±{}%)\n",
            thousands(self.before),
            thousands(self.after),
            self.change_percent,
            self.tolerance_percent
        );
        let verdict = match self.outcome {
            Outcome::Within => "within the tolerance: passed".to_owned(),
            Outcome::Over => format!(
                "FAILED: the scenario costs {:.2}% more instructions than the baseline allows",
                self.change_percent - self.tolerance_percent
            ),
            Outcome::Under => "passed, below the baseline by more than the tolerance: \
                 re-record it (`cargo xtask cost-guard --record`) to keep the gain"
                .to_owned(),
        };
        out.push_str(&verdict);
        out.push('\n');
        if self.after > self.before && !self.grown.is_empty() {
            out.push_str("functions whose self cost grew most (Ir):\n");
            for growth in &self.grown {
                let before = match growth.before {
                    Some(before) => thousands(before),
                    None => "new or unlisted".to_owned(),
                };
                let _ = writeln!(
                    out,
                    "  +{:>13}  {} -> {}  {}",
                    thousands(growth.growth),
                    before,
                    thousands(growth.after),
                    growth.name
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
        entries
            .iter()
            .map(|(name, cost)| ((*name).to_owned(), *cost))
            .collect()
    }

    fn baseline(entries: &[(&str, u64)]) -> Baseline {
        let costs = costs(entries);
        let total = costs.values().sum();
        Baseline::of(
            total,
            &costs,
            3.0,
            "then".into(),
            "rustc x".into(),
            "by hand".into(),
            Vec::new(),
        )
    }

    #[test]
    fn the_baseline_keeps_the_costliest_first_and_reads_back() {
        let mut entries: Vec<(String, u64)> = (0..400u64).map(|i| (format!("f{i}"), i)).collect();
        entries.push(("zero".into(), 0));
        let map: BTreeMap<String, u64> = entries.into_iter().collect();
        let features = vec!["avx2".to_owned(), "sse4_2".to_owned()];
        let baseline = Baseline::of(
            1,
            &map,
            2.5,
            "now".into(),
            "rustc 1".into(),
            "how".into(),
            features.clone(),
        );
        assert_eq!(baseline.functions.len(), LISTED);
        assert_eq!(baseline.functions.first(), Some(&("f399".to_owned(), 399)));
        assert_eq!(baseline.functions.last(), Some(&("f100".to_owned(), 100)));
        let read = Baseline::from_json(&baseline.to_json()).unwrap();
        assert_eq!(read, baseline);
        assert_eq!(read.cpu_features, features);
    }

    #[test]
    fn a_broken_baseline_names_the_field() {
        let good = baseline(&[("a", 1)]).to_json();
        let mut value: Value = serde_json::from_str(&good).unwrap();
        value["total_ir"] = json!("many");
        let error = Baseline::from_json(&value.to_string()).unwrap_err();
        assert!(error.contains("total_ir"), "{error}");
        let mut value: Value = serde_json::from_str(&good).unwrap();
        value["tolerance_percent"] = json!(-1.0);
        let error = Baseline::from_json(&value.to_string()).unwrap_err();
        assert!(error.contains("tolerance_percent"), "{error}");
        let mut value: Value = serde_json::from_str(&good).unwrap();
        value["functions"] = json!([{ "name": "a" }]);
        let error = Baseline::from_json(&value.to_string()).unwrap_err();
        assert!(error.contains("functions[0]"), "{error}");
        assert!(Baseline::from_json("{").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn a_run_within_the_tolerance_passes() {
        let base = baseline(&[("parse", 600), ("serialise", 300), ("alloc", 100)]);
        let now = costs(&[("parse", 610), ("serialise", 305), ("alloc", 100)]);
        let comparison = compare(&base, 1015, &now);
        assert_eq!(comparison.outcome, Outcome::Within);
        assert!(comparison.report().contains("passed"));
        // +1.5%: still within ±3%, either way.
        let now = costs(&[("parse", 590), ("serialise", 295), ("alloc", 100)]);
        assert_eq!(compare(&base, 985, &now).outcome, Outcome::Within);
    }

    /// The deliberate regression: one function's self cost grows by 10% of the run.
    #[test]
    fn a_function_that_grows_fails_the_guard_and_is_named_first() {
        let base = baseline(&[("parse", 600), ("serialise", 300), ("alloc", 100)]);
        let now = costs(&[("parse", 602), ("serialise", 400), ("alloc", 98)]);
        let comparison = compare(&base, 1100, &now);
        assert_eq!(comparison.outcome, Outcome::Over);
        assert_eq!(
            comparison.grown.first().map(|g| g.name.as_str()),
            Some("serialise")
        );
        assert_eq!(comparison.grown.first().map(|g| g.growth), Some(100));
        assert_eq!(comparison.grown.len(), 2, "alloc shrank");
        let report = comparison.report();
        assert!(report.contains("FAILED"), "{report}");
        assert!(
            report.contains("baseline 1,000, now 1,100 (+10.00%"),
            "{report}"
        );
        let first = report.lines().nth(3).unwrap();
        assert!(
            first.ends_with("serialise") && first.contains("300 -> 400"),
            "{report}"
        );
    }

    #[test]
    fn a_new_function_is_reported_by_what_it_must_have_grown() {
        let base = baseline(&[("parse", 600), ("serialise", 300), ("alloc", 100)]);
        // `compile_regex` is new: 150 now, under 100 (the cheapest listed) before.
        let now = costs(&[
            ("parse", 620),
            ("serialise", 300),
            ("alloc", 100),
            ("compile_regex", 150),
            ("tiny", 40),
        ]);
        let comparison = compare(&base, 1210, &now);
        assert_eq!(comparison.outcome, Outcome::Over);
        let names: Vec<&str> = comparison.grown.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["compile_regex", "parse"]);
        assert_eq!(comparison.grown.first().and_then(|g| g.before), None);
        assert!(
            comparison
                .report()
                .contains("new or unlisted -> 150  compile_regex")
        );
    }

    #[test]
    fn a_drop_beyond_the_tolerance_passes_and_asks_for_a_new_baseline() {
        let base = baseline(&[("parse", 600), ("serialise", 300), ("alloc", 100)]);
        let now = costs(&[("parse", 500), ("serialise", 300), ("alloc", 100)]);
        let comparison = compare(&base, 900, &now);
        assert_eq!(comparison.outcome, Outcome::Under);
        let report = comparison.report();
        assert!(report.contains("re-record"), "{report}");
        assert!(!report.contains("grew"), "{report}");
    }

    #[test]
    fn only_the_fifteen_largest_growths_are_named() {
        let names: Vec<String> = (0..40).map(|i| format!("f{i:02}")).collect();
        let before: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 100)).collect();
        let base = baseline(&before);
        let after: BTreeMap<String, u64> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), 101 + i as u64))
            .collect();
        let comparison = compare(&base, after.values().sum(), &after);
        assert_eq!(comparison.grown.len(), REPORTED);
        assert_eq!(
            comparison.grown.first().map(|g| g.name.as_str()),
            Some("f39")
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_736_965_570), "1,736,965,570");
    }
}
