//! One column group of the table: `oxydra eval evals/tasks.toml` with a setup's
//! flags, read back from its JSON report.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use super::table::Row;
use super::{MAX_OUTPUT_TOKENS, Outcome, Setup};

/// The suite file, relative to the workspace root.
pub(super) const SUITE: &str = "evals/tasks.toml";

/// Runs the suite `runs` times per task with `setup`'s flags (only the tasks named or
/// tagged `only`), in a scratch home; returns the rows and, per row, its outcomes.
pub(super) fn run_suite(
    root: &Path,
    oxydra: &Path,
    setup: &Setup,
    runs: usize,
    only: Option<&str>,
) -> Result<(Vec<Row>, Vec<Vec<Outcome>>), String> {
    let scratch = std::env::temp_dir().join(format!("oxydra-tasks-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let home = scratch.join("home");
    fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    // A cap on each answer, so a model that rambles fails its task in seconds rather
    // than at the turn timeout.
    let config = scratch.join("config.toml");
    fs::write(
        &config,
        format!("[runtime]\nmax_output_tokens = {MAX_OUTPUT_TOKENS}\n"),
    )
    .map_err(|e| format!("{}: {e}", config.display()))?;
    let report = scratch.join("report.json");
    let mut command = Command::new(oxydra);
    command
        .arg("eval")
        .arg(root.join(SUITE))
        .args(["--runs", &runs.to_string()])
        .arg("--config")
        .arg(&config)
        .arg("--json")
        .arg(&report)
        .args(&setup.flags)
        .current_dir(&scratch)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("OXYDRA_LOCAL_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(only) = only {
        command.args(["--only", only]);
    }
    // Each run's line goes to stderr as it finishes.
    let status = command
        .status()
        .map_err(|e| format!("could not run {}: {e}", oxydra.display()))?;
    if !status.success() {
        return Err(format!("oxydra eval failed ({status})"));
    }
    let text = fs::read_to_string(&report).map_err(|e| format!("{}: {e}", report.display()))?;
    let _ = fs::remove_dir_all(&scratch);
    parse_report(&text)
}

/// The rows and outcomes of the first report of an `oxydra eval --json` file.
fn parse_report(text: &str) -> Result<(Vec<Row>, Vec<Vec<Outcome>>), String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the eval's JSON report: {e}"))?;
    let tasks = json
        .pointer("/reports/0/tasks")
        .and_then(serde_json::Value::as_array)
        .ok_or("the eval's JSON report has no tasks")?;
    let mut rows = Vec::new();
    let mut outcomes = Vec::new();
    for task in tasks {
        let name = task["name"].as_str().unwrap_or_default();
        let (kind, prompt) = name.split_once(": ").unwrap_or(("", name));
        let seen = task["tags"]
            .as_array()
            .is_some_and(|tags| tags.iter().any(|tag| tag == "seen"));
        rows.push(Row::new(kind, prompt, seen));
        let runs = task["runs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        outcomes.push(
            runs.iter()
                .map(|run| Outcome {
                    success: run["passed"].as_bool().unwrap_or(false),
                    tool_calls: run["tool_calls"]
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .unwrap_or(0),
                    seconds: run["seconds"].as_f64().unwrap_or(0.0),
                })
                .collect(),
        );
    }
    Ok((rows, outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_gives_rows_by_kind_and_prompt_and_their_runs() {
        let text = r#"{"reports":[{"tasks":[
            {"name":"list a folder: Show me inbox.","tags":["seen"],
             "runs":[{"passed":true,"tool_calls":1,"seconds":2.5},
                     {"passed":false,"tool_calls":0,"seconds":1.0}]}]}]}"#;
        let (rows, outcomes) = parse_report(text).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].kind, "list a folder");
        assert_eq!(rows[0].prompt, "Show me inbox.");
        assert!(rows[0].seen);
        assert_eq!(outcomes[0].len(), 2);
        assert!(outcomes[0][0].success && !outcomes[0][1].success);
        assert_eq!(outcomes[0][0].tool_calls, 1);
    }

    #[test]
    fn the_suite_file_keeps_its_prompts_plain() {
        let text = fs::read_to_string(crate::workspace_root().join(SUITE)).unwrap();
        assert_eq!(text.matches("\n[[task]]\n").count(), 30);
        let prompts: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("prompt = "))
            .collect();
        assert_eq!(prompts.len(), 30);
        for prompt in prompts {
            assert!(!prompt.contains("tool"), "{prompt}");
            assert!(!prompt.contains('{'), "{prompt}");
        }
    }
}
