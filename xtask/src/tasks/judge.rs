//! One run of one task: a fresh workspace, `oxydra run --output jsonl` on the task's
//! prompt, and the outcome judged by the task's [`Check`].

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::suite::{Check, Task};
use super::{MAX_OUTPUT_TOKENS, Outcome};

/// Runs `task` once in a fresh `dir` and judges it.
pub(super) fn run_task(
    oxydra: &Path,
    extra: &[String],
    task: &Task,
    dir: &Path,
) -> Result<Outcome, String> {
    let _ = fs::remove_dir_all(dir);
    let workspace = dir.join("workspace");
    let home = dir.join("home");
    for (path, content) in task.files {
        let file = workspace.join(path);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        fs::write(&file, content).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    let config = home.join(".config/oxydra");
    fs::create_dir_all(&config).map_err(|e| format!("{}: {e}", config.display()))?;
    // A cap on each answer, so a model that rambles fails its task in seconds rather
    // than at the turn timeout.
    fs::write(
        config.join("config.toml"),
        format!("[runtime]\nmax_output_tokens = {MAX_OUTPUT_TOKENS}\n"),
    )
    .map_err(|e| format!("{}: {e}", config.display()))?;
    let started = Instant::now();
    let output = Command::new(oxydra)
        .arg("run")
        .args(extra)
        .arg("--workspace")
        .arg(&workspace)
        .arg("--db")
        .arg(dir.join("oxydra.db"))
        .args(["--output", "jsonl", "--approve", "deny", "--max-turns", "4"])
        .arg(task.prompt)
        .current_dir(&workspace)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("OXYDRA_LOCAL_MODEL")
        .output()
        .map_err(|e| format!("could not run {}: {e}", oxydra.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let tool_calls = events
        .iter()
        .filter(|e| e["type"] == "tool_started")
        .count();
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "final")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_default()
        .to_lowercase();
    let success = match &task.check {
        Check::AnswerHasAll(facts) => facts.iter().all(|f| answer.contains(&f.to_lowercase())),
        Check::AnswerHasAny(facts) => facts.iter().any(|f| answer.contains(&f.to_lowercase())),
        Check::FileHasAll(path, texts) => {
            fs::read_to_string(workspace.join(path)).is_ok_and(|content| {
                let content = content.to_lowercase();
                texts.iter().all(|t| content.contains(&t.to_lowercase()))
            })
        }
        Check::AnswerWithoutTools => tool_calls == 0 && !answer.trim().is_empty(),
    };
    if !success {
        // What went wrong, for whoever tunes the small-model levers: the calls made and
        // the answer given.
        let calls: Vec<String> = events
            .iter()
            .filter(|e| e["type"] == "tool_started")
            .map(|e| {
                format!(
                    "{}{}",
                    e["name"].as_str().unwrap_or("?"),
                    e["arguments"].as_str().unwrap_or("")
                )
            })
            .collect();
        let said: String = answer.chars().take(160).collect();
        eprintln!("    calls: {calls:?}; answer: {said:?}");
    }
    Ok(Outcome {
        success,
        tool_calls,
        seconds,
    })
}
