//! The [`Report`] of a suite's runs: per task the success rate and its spread,
//! tokens, cost and time; rendered as a table ([`table`]), JSON (serde) or JUnit XML
//! ([`Report::junit`]).

use serde::{Deserialize, Serialize};

use super::record::RunRecord;

/// The result of one run of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunResult {
    /// Which run of the task (from 0).
    pub index: usize,
    /// Whether every check passed (and the run ended with an answer).
    pub passed: bool,
    /// Why the run ended without an answer, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The checks that failed, each with why (`check: why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Provider calls.
    pub turns: usize,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars.
    pub cost: f64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
}

impl RunResult {
    /// A run that ended without an answer.
    pub(super) fn failed_run(index: usize, error: String, seconds: f64) -> Self {
        Self {
            index,
            passed: false,
            error: Some(error),
            failures: Vec::new(),
            tool_calls: 0,
            turns: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost: 0.0,
            seconds,
        }
    }

    /// A run with an answer and the checks that failed.
    pub(super) fn judged(
        index: usize,
        record: &RunRecord,
        failures: Vec<String>,
        seconds: f64,
    ) -> Self {
        Self {
            index,
            passed: failures.is_empty(),
            error: None,
            failures,
            tool_calls: record.tool_calls.len(),
            turns: record.turns,
            input_tokens: record.usage.input_tokens,
            output_tokens: record.usage.output_tokens,
            cost: record.cost,
            seconds,
        }
    }

    /// Why the run failed, on one line (empty when it passed).
    pub fn why(&self) -> String {
        match &self.error {
            Some(error) => format!("run failed: {error}"),
            None => self.failures.join("; "),
        }
    }
}

/// The runs of one task, and their sums.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskReport {
    /// The task's name.
    pub name: String,
    /// The task's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Runs that passed.
    pub successes: usize,
    /// Successes over runs (0 to 1).
    pub success_rate: f64,
    /// The spread of the runs' successes: their standard deviation (0 when every run
    /// agrees, 0.5 at most).
    pub spread: f64,
    /// Tool calls of all runs.
    pub tool_calls: usize,
    /// The median seconds of a run.
    pub median_seconds: f64,
    /// The slowest run's seconds.
    pub max_seconds: f64,
    /// Input tokens of all runs.
    pub input_tokens: u64,
    /// Output tokens of all runs.
    pub output_tokens: u64,
    /// Cost of all runs in US dollars.
    pub cost: f64,
    /// Each run, in order.
    pub runs: Vec<RunResult>,
}

impl TaskReport {
    /// The report of task `name` from its `runs` (add tags with [`TaskReport::tagged`]).
    pub fn new(name: &str, runs: Vec<RunResult>) -> Self {
        let successes = runs.iter().filter(|run| run.passed).count();
        let count = runs.len().max(1) as f64;
        let rate = successes as f64 / count;
        let mut seconds: Vec<f64> = runs.iter().map(|run| run.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        Self {
            name: name.to_owned(),
            tags: Vec::new(),
            successes,
            success_rate: rate,
            spread: (rate * (1.0 - rate)).sqrt(),
            tool_calls: runs.iter().map(|run| run.tool_calls).sum(),
            median_seconds: median(&seconds),
            max_seconds: seconds.last().copied().unwrap_or(0.0),
            input_tokens: runs.iter().map(|run| run.input_tokens).sum(),
            output_tokens: runs.iter().map(|run| run.output_tokens).sum(),
            cost: runs.iter().map(|run| run.cost).sum(),
            runs,
        }
    }
}

impl TaskReport {
    /// The report with `tags`.
    #[must_use]
    pub fn tagged(mut self, tags: &[String]) -> Self {
        self.tags = tags.to_vec();
        self
    }
}

/// The median of sorted `values` (0 for none).
fn median(values: &[f64]) -> f64 {
    let mid = values.len() / 2;
    match (values.len() % 2, values.get(mid), mid.checked_sub(1)) {
        (_, None, _) => 0.0,
        (1, Some(&value), _) => value,
        (_, Some(&high), Some(low)) => (values.get(low).copied().unwrap_or(high) + high) / 2.0,
        (_, Some(&value), None) => value,
    }
}

/// What a suite's runs gave with one set-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// The suite's name.
    pub suite: String,
    /// The set-up (model or config) it ran with.
    pub label: String,
    /// Runs per task.
    pub runs_per_task: usize,
    /// Successes over runs, all tasks together (0 to 1).
    pub success_rate: f64,
    /// The tasks, in the suite's order.
    pub tasks: Vec<TaskReport>,
}

impl Report {
    /// The report of `tasks`.
    pub fn new(suite: &str, label: &str, runs_per_task: usize, tasks: Vec<TaskReport>) -> Self {
        let runs: usize = tasks.iter().map(|task| task.runs.len()).sum();
        let successes: usize = tasks.iter().map(|task| task.successes).sum();
        Self {
            suite: suite.to_owned(),
            label: label.to_owned(),
            runs_per_task,
            success_rate: successes as f64 / runs.max(1) as f64,
            tasks,
        }
    }

    /// The task named `name`.
    pub fn task(&self, name: &str) -> Option<&TaskReport> {
        self.tasks.iter().find(|task| task.name == name)
    }

    /// What is below `threshold` (a rate from 0 to 1): each task whose success rate
    /// is, and the whole suite if its rate is, as lines to show.
    pub fn below(&self, threshold: f64) -> Vec<String> {
        let mut below: Vec<String> = self
            .tasks
            .iter()
            .filter(|task| task.success_rate < threshold)
            .map(|task| {
                format!(
                    "{}: task `{}` succeeded {:.0}% < {:.0}%",
                    self.label,
                    task.name,
                    task.success_rate * 100.0,
                    threshold * 100.0
                )
            })
            .collect();
        if self.success_rate < threshold {
            below.push(format!(
                "{}: the suite succeeded {:.0}% < {:.0}%",
                self.label,
                self.success_rate * 100.0,
                threshold * 100.0
            ));
        }
        below
    }
}

/// The reports side by side as a plain-text table: a row per task, per report its
/// successes, spread, tokens, cost and median seconds; then the failures.
pub fn table(reports: &[Report]) -> String {
    let width = reports
        .first()
        .map_or(4, |report| {
            report
                .tasks
                .iter()
                .map(|task| task.name.chars().count())
                .max()
                .unwrap_or(4)
        })
        .clamp(4, 48);
    let mut out = format!("{:<width$}", "task");
    for report in reports {
        out.push_str(&format!(
            " | {:<36}",
            format!(
                "{} ({} runs)",
                clip(&report.label, 24),
                report.runs_per_task
            )
        ));
    }
    out.push('\n');
    out.push_str(&"-".repeat(width));
    for _ in reports {
        out.push_str(&format!("-+-{}", "-".repeat(36)));
    }
    out.push('\n');
    let names: Vec<&str> = reports
        .first()
        .map(|report| report.tasks.iter().map(|task| task.name.as_str()).collect())
        .unwrap_or_default();
    for name in names {
        out.push_str(&format!("{:<width$}", clip(name, width)));
        for report in reports {
            let cell = report.task(name).map_or_else(String::new, |task| {
                format!(
                    "{}/{} ±{:.2} {}tok ${:.4} {:.1}s",
                    task.successes,
                    task.runs.len(),
                    task.spread,
                    task.input_tokens + task.output_tokens,
                    task.cost,
                    task.median_seconds
                )
            });
            out.push_str(&format!(" | {cell:<36}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("{:<width$}", "overall"));
    for report in reports {
        out.push_str(&format!(
            " | {:<36}",
            format!("{:.0}%", report.success_rate * 100.0)
        ));
    }
    out.push('\n');
    for report in reports {
        for task in &report.tasks {
            for run in task.runs.iter().filter(|run| !run.passed) {
                out.push_str(&format!(
                    "FAILED {} `{}` run {}: {}\n",
                    report.label,
                    task.name,
                    run.index + 1,
                    run.why()
                ));
            }
        }
    }
    out
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(index: usize, passed: bool, seconds: f64) -> RunResult {
        let mut result = RunResult::failed_run(index, "boom".into(), seconds);
        if passed {
            result.passed = true;
            result.error = None;
        }
        result
    }

    #[test]
    fn rates_spread_and_median_are_computed_from_the_runs() {
        let task = TaskReport::new(
            "t",
            vec![
                run(0, true, 3.0),
                run(1, false, 1.0),
                run(2, true, 2.0),
                run(3, true, 9.0),
            ],
        );
        assert_eq!(task.successes, 3);
        assert!((task.success_rate - 0.75).abs() < 1e-9);
        assert!((task.spread - (0.75f64 * 0.25).sqrt()).abs() < 1e-9);
        assert!((task.median_seconds - 2.5).abs() < 1e-9);
        assert!((task.max_seconds - 9.0).abs() < 1e-9);
        let report = Report::new("s", "m", 4, vec![task]);
        assert!(report.below(0.7).is_empty());
        let below = report.below(0.8);
        assert_eq!(below.len(), 2, "{below:?}");
        assert!(below[0].contains("task `t`"));
        let text = table(&[report.clone(), report]);
        assert!(text.contains("3/4"), "{text}");
        assert!(
            text.contains("FAILED m `t` run 2: run failed: boom"),
            "{text}"
        );
    }
}
