//! `oxydra eval SUITE.toml`: the suite's tasks, each run K times through the normal
//! agent (sandbox, consent and scrubbing as configured), each run in a fresh
//! temporary workspace with a fresh session store; a table, JSON and JUnit XML.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxydra::eval::{
    self, EvalAgent, EvalOptions, Report, RunRecord, RunResult, Suite, Task, TaskRun,
};
use oxydra::serde_json::{self, json};
use oxydra::types::SessionId;

use crate::args::{EvalArgs, OutputFormat, RunOptions};
use crate::config::ApproveMode;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;
use crate::output::Renderer;
use crate::setup::agent;
use crate::terminal_input::TerminalInput;

/// One set-up the suite runs with: the flags of its runs and its name in the report.
struct Setup {
    label: String,
    options: RunOptions,
}

/// The agent of one set-up: each run merges the configuration with the run's own
/// workspace and store, and builds the runtime as `oxydra run` does.
struct CliAgent<'a> {
    options: RunOptions,
    interrupts: &'a Interrupts,
}

#[oxydra::async_trait]
impl EvalAgent for CliAgent<'_> {
    async fn run(&self, run: TaskRun<'_>) -> Result<RunRecord, String> {
        let mut options = self.options.clone();
        options.workspace = Some(run.workspace.to_path_buf());
        options.db = Some(run.store.join("oxydra.db"));
        if let Some(turns) = run.task.max_turns {
            options.max_turns = usize::try_from(turns).ok();
        }
        if let Some(cost) = run.task.max_cost {
            options.max_cost = Some(cost);
        }
        let effective = super::run::effective(&options).map_err(|error| error.to_string())?;
        effective
            .require_known_price(&options)
            .map_err(|error| error.to_string())?;
        // No one answers a question in the middle of a batch of runs.
        let mut effective = effective;
        if effective.approve() == ApproveMode::Ask {
            effective.runtime.approve = Some(ApproveMode::Deny);
        }
        let agent = agent::build(
            &effective,
            Arc::new(Renderer::silent()),
            self.interrupts,
            TerminalInput::from_fd(None, false),
            false,
        )
        .await
        .map_err(|error| error.to_string())?;
        let session = SessionId::generate();
        let outcome = agent
            .runtime
            .session(&session)
            .prompt(run.task.prompt.clone())
            .cancel(run.cancel)
            .await;
        let messages = agent.memory.messages(&session).await;
        agent.stop().await;
        let outcome = outcome.map_err(|error| error.to_string())?;
        let messages: Vec<_> = messages
            .map_err(|error| error.to_string())?
            .into_iter()
            .map(|stored| stored.message)
            .collect();
        Ok(RunRecord::from_session(&outcome, &messages))
    }
}

/// Runs `oxydra eval`.
pub async fn run(args: EvalArgs) -> Result<Exit, CliError> {
    if let Some(rate) = args.threshold
        && !(0.0..=1.0).contains(&rate)
    {
        return Err(CliError::Flag {
            flag: "--threshold",
            message: format!("{rate} is not a rate from 0 to 1"),
        });
    }
    let path = args.suite.clone();
    let mut suite = tokio::task::spawn_blocking(move || Suite::load(&path))
        .await
        .map_err(|error| CliError::Eval(error.to_string()))?
        .map_err(|error| CliError::Eval(error.to_string()))?;
    if let Some(only) = &args.only {
        suite
            .tasks
            .retain(|task| task.name.contains(only.as_str()) || task.tags.contains(only));
        if suite.tasks.is_empty() {
            return Err(CliError::Flag {
                flag: "--only",
                message: format!(
                    "no task of {} is named or tagged {only:?}",
                    args.suite.display()
                ),
            });
        }
    }
    let setups = setups(&args)?;
    let interrupts = Interrupts::install();
    let cancel = interrupts.begin_turn();
    let jsonl = args.output == OutputFormat::Jsonl;
    let mut reports = Vec::new();
    for setup in setups {
        let agent = CliAgent {
            options: setup.options,
            interrupts: &interrupts,
        };
        let mut options = EvalOptions::default();
        options.runs = args.runs.and_then(|runs| usize::try_from(runs).ok());
        options.parallel = usize::try_from(args.parallel).unwrap_or(1);
        options.label.clone_from(&setup.label);
        options.cancel = cancel.clone();
        let label = setup.label.clone();
        let on_run = move |task: &Task, result: &RunResult| {
            progress(jsonl, &label, task, result);
        };
        let report = suite
            .run(&agent, &options, &on_run)
            .await
            .map_err(|error| CliError::Run {
                kind: error.kind().to_owned(),
                message: error.to_string(),
            })?;
        reports.push(report);
    }
    interrupts.end_turn();
    write_reports(&args, &reports)?;
    let below: Vec<String> = args
        .threshold
        .map(|rate| {
            reports
                .iter()
                .flat_map(|report| report.below(rate))
                .collect()
        })
        .unwrap_or_default();
    for line in &below {
        eprintln!("below the threshold: {}", crate::terminal_text::lines(line));
    }
    Ok(if below.is_empty() {
        Exit::Done
    } else {
        Exit::Runtime
    })
}

/// The set-ups: the flags given, and the one of `--compare` (a configuration file
/// when the path exists, else a model name).
fn setups(args: &EvalArgs) -> Result<Vec<Setup>, CliError> {
    let primary = RunOptions {
        config: args.config.clone(),
        provider: args.provider,
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        ..RunOptions::default()
    };
    // A model file is named by its file name.
    let label_of = |options: &RunOptions| -> Result<String, CliError> {
        let model = super::run::effective(options)?.provider.model;
        Ok(Path::new(&model)
            .file_name()
            .filter(|_| model.contains('/'))
            .map_or_else(|| model.clone(), |name| name.to_string_lossy().into_owned()))
    };
    let mut setups = vec![Setup {
        label: label_of(&primary)?,
        options: primary.clone(),
    }];
    if let Some(other) = &args.compare {
        let options = if Path::new(other).is_file() {
            RunOptions {
                config: Some(PathBuf::from(other)),
                ..RunOptions::default()
            }
        } else {
            RunOptions {
                model: Some(other.clone()),
                ..primary
            }
        };
        let mut label = label_of(&options)?;
        if setups.iter().any(|setup| setup.label == label) {
            label = format!("{label} ({other})");
        }
        setups.push(Setup { label, options });
    }
    Ok(setups)
}

/// Says that a run finished: a line on stderr, or an `eval_run` event.
fn progress(jsonl: bool, label: &str, task: &Task, result: &RunResult) {
    if jsonl {
        let line = json!({
            "type": "eval_run",
            "label": label,
            "task": task.name,
            "run": result.index + 1,
            "result": result,
        });
        println!("{line}");
    } else {
        let verdict = if result.passed { "passed" } else { "FAILED" };
        let why = if result.passed {
            String::new()
        } else {
            format!(": {}", result.why())
        };
        eprintln!(
            "{}",
            crate::terminal_text::lines(&format!(
                "{label} · {} · run {}: {verdict} ({:.1} s){why}",
                task.name,
                result.index + 1,
                result.seconds
            ))
        );
    }
}

/// Prints the table (or the `eval_report` events) and writes `--json` and `--junit`.
fn write_reports(args: &EvalArgs, reports: &[Report]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if args.output == OutputFormat::Jsonl {
        for report in reports {
            let mut line = serde_json::to_value(report).unwrap_or_default();
            if let Some(object) = line.as_object_mut() {
                object.insert("type".into(), "eval_report".into());
            }
            writeln!(out, "{line}").map_err(CliError::stdout)?;
        }
    } else {
        let table = eval::table(reports);
        write!(out, "{}", crate::terminal_text::lines(&table)).map_err(CliError::stdout)?;
    }
    out.flush().map_err(CliError::stdout)?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json!({ "reports": reports })).unwrap_or_default();
        write_file(path, &text)?;
    }
    if let Some(path) = &args.junit {
        write_file(path, &eval::junit(reports))?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|source| CliError::Io {
        what: "cannot write the report",
        path: path.to_path_buf(),
        source,
    })
}
