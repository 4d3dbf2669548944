//! JUnit XML of a [`Report`]: a `<testsuite>` per report, a `<testcase>` per run of a
//! task, a `<failure>` naming the failed checks.

use std::fmt::Write;

use super::report::Report;

impl Report {
    /// The report as a JUnit XML document (for CI systems).
    pub fn junit(&self) -> String {
        junit(std::slice::from_ref(self))
    }
}

/// `reports` as one JUnit XML document, a `<testsuite>` per report.
pub fn junit(reports: &[Report]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let tests: usize = reports.iter().map(runs).sum();
    let failures: usize = reports.iter().map(failed).sum();
    let _ = writeln!(
        out,
        "<testsuites tests=\"{tests}\" failures=\"{failures}\">"
    );
    for report in reports {
        let time: f64 = report
            .tasks
            .iter()
            .flat_map(|task| task.runs.iter().map(|run| run.seconds))
            .sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{time:.3}\">",
            escape(&format!("{} ({})", report.suite, report.label)),
            runs(report),
            failed(report)
        );
        for task in &report.tasks {
            for run in &task.runs {
                let _ = write!(
                    out,
                    "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                    escape(&format!("{}.{}", report.suite, report.label)),
                    escape(&format!("{} #{}", task.name, run.index + 1)),
                    run.seconds
                );
                if run.passed {
                    out.push_str("/>\n");
                } else {
                    let why = run.why();
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        escape(&why),
                        escape(&why)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn runs(report: &Report) -> usize {
    report.tasks.iter().map(|task| task.runs.len()).sum()
}

fn failed(report: &Report) -> usize {
    report
        .tasks
        .iter()
        .flat_map(|task| task.runs.iter())
        .filter(|run| !run.passed)
        .count()
}

/// `text` as XML character data or an attribute value: the five special characters
/// as entities, line breaks and tabs as character references, and characters XML 1.0
/// cannot hold (other control characters, U+FFFE, U+FFFF) as U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::report::{RunResult, TaskReport};

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape("a<b>&\"c'\n\u{1b}[31m"),
            "a&lt;b&gt;&amp;&quot;c&apos;&#10;\u{fffd}[31m"
        );
        let mut run = RunResult::failed_run(0, "]]></failure><x a=\"".into(), 1.0);
        run.failures.clear();
        let report = Report::new("s<", "m&", 1, vec![TaskReport::new("t\"", vec![run])]);
        let xml = report.junit();
        assert!(!xml.contains("]]></failure><x"), "{xml}");
        assert!(xml.contains("name=\"s&lt; (m&amp;)\""), "{xml}");
        assert!(xml.contains("failures=\"1\""), "{xml}");
    }
}
