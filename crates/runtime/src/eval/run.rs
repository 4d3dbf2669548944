//! Running a suite: each task `runs` times, at most `parallel` runs at once, each in
//! a fresh temporary workspace (the fixture copied) with a fresh folder for its
//! session store.

use std::path::Path;
use std::time::Instant;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::record::RunRecord;
use super::report::{Report, RunResult, TaskReport};
use super::suite::{Suite, Task};
use crate::error::RuntimeError;

/// One run for an [`EvalAgent`] to do.
#[derive(Debug)]
#[non_exhaustive]
pub struct TaskRun<'a> {
    /// The task.
    pub task: &'a Task,
    /// Which run of the task this is (from 0).
    pub index: usize,
    /// The run's workspace: a fresh temporary folder holding the fixture.
    pub workspace: &'a Path,
    /// A fresh temporary folder, outside the workspace, for the run's session store.
    pub store: &'a Path,
    /// Fires when the eval is cancelled.
    pub cancel: &'a CancellationToken,
}

/// The agent under evaluation: runs one task's prompt in the given workspace,
/// through the normal runtime (its tools confined to `run.workspace`, its sandbox,
/// consent and scrubbing as configured).
#[async_trait::async_trait]
pub trait EvalAgent: Send + Sync {
    /// Runs `run.task.prompt`; `Err` is why the run ended without an answer (a
    /// budget, a provider error): the run fails with it.
    async fn run(&self, run: TaskRun<'_>) -> Result<RunRecord, String>;
}

/// How a suite is run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EvalOptions {
    /// Runs per task; `None`: the suite's `[defaults] runs`, else 1.
    pub runs: Option<usize>,
    /// At most this many runs at once (0 counts as 1).
    pub parallel: usize,
    /// The name of this set-up in the report (the model or config), e.g. `"gpt-4o"`.
    pub label: String,
    /// Cancels the eval: runs in flight get it, and no new run starts.
    pub cancel: CancellationToken,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            runs: None,
            parallel: 1,
            label: "agent".into(),
            cancel: CancellationToken::new(),
        }
    }
}

impl Suite {
    /// Runs every task of the suite with `agent`, and reports. `on_run` is told of
    /// each finished run (task, its result), as it finishes.
    ///
    /// # Errors
    /// [`RuntimeError::Cancelled`] when `options.cancel` fired;
    /// [`RuntimeError::Config`] when a temporary workspace cannot be made.
    pub async fn run(
        &self,
        agent: &dyn EvalAgent,
        options: &EvalOptions,
        on_run: &(dyn Fn(&Task, &RunResult) + Sync),
    ) -> Result<Report, RuntimeError> {
        let runs = options.runs.or(self.defaults.runs).unwrap_or(1).max(1);
        let jobs = self
            .tasks
            .iter()
            .enumerate()
            .flat_map(|(task_index, task)| (0..runs).map(move |index| (task_index, task, index)));
        let mut finished: Vec<(usize, usize, RunResult)> = futures::stream::iter(jobs)
            .map(|(task_index, task, index)| async move {
                let result = run_one(agent, task, index, &options.cancel).await;
                if let Ok(result) = &result {
                    on_run(task, result);
                }
                result.map(|result| (task_index, index, result))
            })
            .buffer_unordered(options.parallel.max(1))
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        if options.cancel.is_cancelled() {
            return Err(RuntimeError::Cancelled);
        }
        finished.sort_by_key(|(task, index, _)| (*task, *index));
        let tasks = self
            .tasks
            .iter()
            .enumerate()
            .map(|(task_index, task)| {
                let results = finished
                    .iter()
                    .filter(|(index, _, _)| *index == task_index)
                    .map(|(_, _, result)| result.clone())
                    .collect();
                TaskReport::new(&task.name, results).tagged(&task.tags)
            })
            .collect();
        Ok(Report::new(&self.name, &options.label, runs, tasks))
    }
}

/// One run of `task`: a fresh workspace, the agent, the checks.
async fn run_one(
    agent: &dyn EvalAgent,
    task: &Task,
    index: usize,
    cancel: &CancellationToken,
) -> Result<RunResult, RuntimeError> {
    if cancel.is_cancelled() {
        return Err(RuntimeError::Cancelled);
    }
    let setup_error = |error: String| RuntimeError::Config(format!("eval workspace: {error}"));
    let fixture = task.fixture.clone();
    let scratch = tokio::task::spawn_blocking(move || -> Result<tempfile::TempDir, String> {
        let scratch = tempfile::Builder::new()
            .prefix("oxydra-eval-")
            .tempdir()
            .map_err(|error| error.to_string())?;
        for dir in ["workspace", "store"] {
            std::fs::create_dir(scratch.path().join(dir)).map_err(|error| error.to_string())?;
        }
        fixture.materialize(&scratch.path().join("workspace"))?;
        Ok(scratch)
    })
    .await
    .map_err(|error| setup_error(error.to_string()))?
    .map_err(setup_error)?;
    let workspace = scratch.path().join("workspace");
    let store = scratch.path().join("store");
    let started = Instant::now();
    let outcome = agent
        .run(TaskRun {
            task,
            index,
            workspace: &workspace,
            store: &store,
            cancel,
        })
        .await;
    let seconds = started.elapsed().as_secs_f64();
    if cancel.is_cancelled() {
        return Err(RuntimeError::Cancelled);
    }
    let checks = task.checks.clone();
    let judged = tokio::task::spawn_blocking(move || {
        let result = match outcome {
            Err(error) => RunResult::failed_run(index, error, seconds),
            Ok(record) => {
                let failures = checks
                    .iter()
                    .filter_map(|check| {
                        check
                            .judge(&record, &workspace)
                            .err()
                            .map(|why| format!("{check}: {why}"))
                    })
                    .collect();
                RunResult::judged(index, &record, failures, seconds)
            }
        };
        // The workspace goes with the run.
        drop(scratch);
        result
    })
    .await
    .map_err(|error| setup_error(error.to_string()))?;
    Ok(judged)
}
