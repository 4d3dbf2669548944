//! What the clients of a load got, summed up: answers by status, requests without an
//! answer by error, the latency distribution and how many answers came later than the
//! goal.

use std::collections::BTreeMap;
use std::time::Duration;

use super::stats::{Summary, millis};
use super::{GOAL, Outcome, http};

/// The clients' outcomes, summed up.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// Answers by status code.
    pub(super) statuses: BTreeMap<u16, usize>,
    /// Requests without an answer, by error.
    pub(super) errors: BTreeMap<String, usize>,
    /// The latency of every answer (whatever its status).
    pub(super) latencies: Vec<Duration>,
    /// The runs the `201` answers name.
    pub(super) run_ids: Vec<String>,
}

impl Report {
    pub(super) fn of(outcomes: &[Outcome]) -> Self {
        let mut report = Self::default();
        for outcome in outcomes {
            match &outcome.answer {
                Ok(answer) => {
                    *report.statuses.entry(answer.status).or_insert(0) += 1;
                    report.latencies.push(outcome.latency);
                    if answer.status == 201
                        && let Some(id) = http::run_id(&answer.body)
                    {
                        report.run_ids.push(id);
                    }
                }
                Err(error) => {
                    // "connect: Connection refused (os error 111)": the kind, not the
                    // variable part, is what is counted.
                    let kind = error.split(" (").next().unwrap_or(error).to_owned();
                    *report.errors.entry(kind).or_insert(0) += 1;
                }
            }
        }
        report
    }

    /// The lines printed.
    pub(super) fn text(&self, clients: usize) -> String {
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(status, count)| format!("{count} × {status}"))
            .collect();
        let mut text = format!(
            "{clients} concurrent POST /runs: answers {}",
            if statuses.is_empty() {
                "none".to_owned()
            } else {
                statuses.join(", ")
            }
        );
        for (error, count) in &self.errors {
            text.push_str(&format!("; {count} without an answer ({error})"));
        }
        match Summary::of(&self.latencies) {
            Some(summary) => {
                let late = self.latencies.iter().filter(|l| **l > GOAL).count();
                text.push_str(&format!(
                    "\nlatency from connect to the answer's end, {}; {late} later than {}",
                    summary.line(),
                    millis(GOAL)
                ));
            }
            None => text.push_str("\nno answer at all"),
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(ms: u64, answer: Result<(u16, &str), &str>) -> Outcome {
        Outcome {
            latency: Duration::from_millis(ms),
            answer: answer
                .map(|(status, body)| http::Answer {
                    status,
                    body: body.to_owned(),
                })
                .map_err(str::to_owned),
        }
    }

    #[test]
    fn answers_errors_and_late_ones_are_counted() {
        let outcomes = [
            outcome(10, Ok((201, r#"{"run_id":"run_a","status":"pending"}"#))),
            outcome(1600, Ok((201, r#"{"run_id":"run_b","status":"pending"}"#))),
            outcome(20, Ok((503, "{}"))),
            outcome(5, Err("connect: Connection refused (os error 111)")),
            outcome(6, Err("connect: Connection refused (os error 111)")),
        ];
        let report = Report::of(&outcomes);
        assert_eq!(report.run_ids, ["run_a", "run_b"]);
        assert_eq!(report.statuses.get(&201), Some(&2));
        assert_eq!(report.errors.get("connect: Connection refused"), Some(&2));
        assert_eq!(report.latencies.len(), 3);
        let text = report.text(5);
        assert!(text.contains("2 × 201, 1 × 503"), "{text}");
        assert!(
            text.contains("2 without an answer (connect: Connection refused)"),
            "{text}"
        );
        assert!(text.contains("1 later than 1500.0 ms"), "{text}");
    }
}
