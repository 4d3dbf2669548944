//! The table `cargo xtask tasks` prints (and writes into docs/performance.md): a row
//! per task, a column group per setup, success rates per kind and per phrasing.

use std::path::Path;

use super::{MAX_OUTPUT_TOKENS, Outcome, Setup};

/// The median of `values` (0 for none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values.get(n / 2).copied().unwrap_or_default(),
        n => {
            let a = values.get(n / 2 - 1).copied().unwrap_or_default();
            let b = values.get(n / 2).copied().unwrap_or_default();
            (a + b) / 2.0
        }
    }
}

/// What the table shows of a task besides its outcomes.
pub(super) struct Row {
    /// What the task asks for (its name before `: `); each kind has several phrasings.
    pub(super) kind: String,
    /// The prompt.
    pub(super) prompt: String,
    /// Whether the prompt is one the suite had before it was broadened (issue 43;
    /// the tag `seen`): the small-model levers were tuned on these.
    pub(super) seen: bool,
}

impl Row {
    pub(super) fn new(kind: &str, prompt: &str, seen: bool) -> Self {
        Self {
            kind: kind.to_owned(),
            prompt: prompt.to_owned(),
            seen,
        }
    }
}

/// The mean and the lowest and highest of `rates` (0 for none).
fn mean_and_range(rates: &[f64]) -> (f64, f64, f64) {
    if rates.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let high = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, low, high)
}

/// The success rate of each replicate (run index) of the suite over the rows that
/// `keep` selects: one rate per run, so their spread says how much one suite swings.
fn rates_per_run(rows: &[Row], column: &[Vec<Outcome>], keep: impl Fn(&Row) -> bool) -> Vec<f64> {
    let runs = column.iter().map(Vec::len).max().unwrap_or(0);
    (0..runs)
        .filter_map(|run| {
            let picked: Vec<bool> = rows
                .iter()
                .zip(column)
                .filter(|(row, _)| keep(row))
                .filter_map(|(_, outcomes)| outcomes.get(run).map(|o| o.success))
                .collect();
            (!picked.is_empty())
                .then(|| picked.iter().filter(|&&done| done).count() as f64 / picked.len() as f64)
        })
        .collect()
}

/// `mean% (per run: a%, b%, c%; range low–high)` of `rates`.
fn rate_summary(rates: &[f64]) -> String {
    let (mean, low, high) = mean_and_range(rates);
    let each = rates
        .iter()
        .map(|r| format!("{:.0}%", r * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{:.0}% (per run: {each}; spread {:.0}–{:.0}%)",
        mean * 100.0,
        low * 100.0,
        high * 100.0
    )
}

/// The table: a row per task (kind, prompt, whether the suite had that phrasing
/// before it was broadened), a column group per setup (successes, tool calls of each
/// run, median time); then per setup the success rate of each kind and of the seen
/// and the new phrasings, as the mean over the runs and its spread.
pub(super) fn render(rows: &[Row], setups: &[Setup], columns: &[Vec<Vec<Outcome>>]) -> String {
    let mut head = String::from("| kind | prompt | phrasing |");
    let mut rule = String::from("|---|---|---|");
    for setup in setups {
        let label = &setup.label;
        head.push_str(&format!(
            " {label}: success | {label}: tool calls (per run) | {label}: median time |"
        ));
        rule.push_str("---|---|---|");
    }
    let mut out = format!("{head}\n{rule}\n");
    for (index, row) in rows.iter().enumerate() {
        let phrasing = if row.seen { "seen" } else { "new" };
        out.push_str(&format!(
            "| {} | {} | {phrasing} |",
            row.kind,
            row.prompt.replace('|', "\\|")
        ));
        for column in columns {
            let outcomes = column.get(index).map(Vec::as_slice).unwrap_or_default();
            let successes = outcomes.iter().filter(|o| o.success).count();
            let calls = outcomes
                .iter()
                .map(|o| o.tool_calls.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let time = median(outcomes.iter().map(|o| o.seconds).collect());
            out.push_str(&format!(
                " {successes}/{} | {calls} | {time:.1} s |",
                outcomes.len()
            ));
        }
        out.push('\n');
    }
    let mut kinds: Vec<&str> = Vec::new();
    for row in rows {
        if !kinds.contains(&row.kind.as_str()) {
            kinds.push(&row.kind);
        }
    }
    for (setup, column) in setups.iter().zip(columns) {
        let done = column.iter().flatten().filter(|o| o.success).count();
        let total = column.iter().map(Vec::len).sum::<usize>();
        let calls = column.iter().flatten().map(|o| o.tool_calls).sum::<usize>();
        out.push_str(&format!(
            "\n{}: {done}/{total} done, {calls} tool calls, with `oxydra eval {} {}` and \
             `max_output_tokens = {MAX_OUTPUT_TOKENS}`.\n\n",
            setup.label,
            super::eval::SUITE,
            shown_flags(&setup.flags)
        ));
        out.push_str(&format!(
            "- new phrasings: {}\n",
            rate_summary(&rates_per_run(rows, column, |row| !row.seen))
        ));
        out.push_str(&format!(
            "- seen phrasings: {}\n",
            rate_summary(&rates_per_run(rows, column, |row| row.seen))
        ));
        for kind in &kinds {
            out.push_str(&format!(
                "- {kind}: {}\n",
                rate_summary(&rates_per_run(rows, column, |row| row.kind == *kind))
            ));
        }
    }
    out
}

/// The flags as the table shows them: file paths by their file name, loopback URLs
/// without their (random) port.
fn shown_flags(flags: &[String]) -> String {
    flags
        .iter()
        .map(|a| {
            if a.starts_with("http://127.0.0.1:") {
                return "http://127.0.0.1:PORT/v1".to_owned();
            }
            Path::new(a)
                .file_name()
                .filter(|_| a.contains('/'))
                .map_or(a.clone(), |f| f.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert!((median(vec![3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(vec![4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!(median(Vec::new()).abs() < f64::EPSILON);
    }

    fn row(kind: &'static str, seen: bool) -> Row {
        Row::new(kind, "p", seen)
    }

    #[test]
    fn the_table_counts_successes_and_names_the_model_file_only() {
        let outcome = |success, tool_calls| Outcome {
            success,
            tool_calls,
            seconds: 2.0,
        };
        let setups = [Setup {
            label: "oxydra".into(),
            flags: vec!["--model".into(), "/a/b/m.gguf".into()],
        }];
        let columns = vec![vec![vec![outcome(true, 1), outcome(false, 0)]]];
        let table = render(&[row("t", true)], &setups, &columns);
        assert!(
            table.contains("| t | p | seen | 1/2 | 1, 0 | 2.0 s |"),
            "{table}"
        );
        assert!(
            table.contains(
                "oxydra: 1/2 done, 1 tool calls, with `oxydra eval evals/tasks.toml --model m.gguf`"
            ),
            "{table}"
        );
        assert!(
            table.contains("- seen phrasings: 50% (per run: 100%, 0%; spread 0–100%)"),
            "{table}"
        );
    }

    #[test]
    fn a_peer_gets_a_column_group_of_its_own_and_no_port() {
        let outcome = |success, tool_calls| Outcome {
            success,
            tool_calls,
            seconds: 1.0,
        };
        let setups = [
            Setup {
                label: "oxydra".into(),
                flags: vec!["--provider".into(), "local".into()],
            },
            Setup {
                label: "peer".into(),
                flags: vec!["--base-url".into(), "http://127.0.0.1:4321/v1".into()],
            },
        ];
        let columns = vec![
            vec![vec![outcome(true, 2)], vec![outcome(true, 1)]],
            vec![vec![outcome(false, 0)], vec![outcome(true, 3)]],
        ];
        let table = render(&[row("a", true), row("b", false)], &setups, &columns);
        assert!(
            table.contains("| a | p | seen | 1/1 | 2 | 1.0 s | 0/1 | 0 | 1.0 s |"),
            "{table}"
        );
        assert!(
            table.contains("| b | p | new | 1/1 | 1 | 1.0 s | 1/1 | 3 | 1.0 s |"),
            "{table}"
        );
        assert!(table.contains("peer: 1/2 done, 3 tool calls"), "{table}");
        assert!(table.contains("http://127.0.0.1:PORT/v1"), "{table}");
        assert!(!table.contains("4321"), "{table}");
    }
}
