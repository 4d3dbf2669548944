//! Evals: score an agent by the outcome of tasks, run many times.
//!
//! A [`Suite`] (read from a TOML file with [`Suite::load`], or built in Rust) holds
//! [`Task`]s: a workspace [`Fixture`], a prompt and [`Check`]s of the outcome (a
//! file's content, the answer, the tools called, turns, cost). [`Suite::run`] runs
//! each task `k` times, at most `parallel` at once, each run in a fresh temporary
//! workspace with the fixture copied in and a fresh folder for its session store,
//! through an [`EvalAgent`] — the normal runtime, set up by the caller. The
//! [`Report`] gives each task's success rate and spread, tokens, cost and time, as a
//! [`table`], JSON (it is `Serialize`) or JUnit XML ([`junit`]), so a Rust test can
//! assert on an agent's outcome rates:
//!
//! ```
//! use oxydra_runtime::eval::{Check, EvalAgent, EvalOptions, RunRecord, Suite, Task, TaskRun};
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl EvalAgent for Echo {
//!     async fn run(&self, run: TaskRun<'_>) -> Result<RunRecord, String> {
//!         // A real agent builds an AgentRuntime on `run.workspace` (and a store in
//!         // `run.store`) and records its outcome with `RunRecord::from_session`.
//!         std::fs::write(run.workspace.join("out.txt"), "hi").map_err(|e| e.to_string())?;
//!         let mut record = RunRecord::default();
//!         record.answer = "wrote out.txt".into();
//!         Ok(record)
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let task = Task::new("write", "Write hi to out.txt").check(Check::FileEquals {
//!     path: "out.txt".into(),
//!     content: "hi".into(),
//! });
//! let suite = Suite::new("demo", vec![task]);
//! let mut options = EvalOptions::default();
//! options.runs = Some(3);
//! let report = suite.run(&Echo, &options, &|_, _| {}).await.unwrap();
//! assert_eq!(report.task("write").unwrap().success_rate, 1.0);
//! # });
//! ```

mod check;
mod fixture;
mod junit;
mod record;
mod report;
mod run;
mod suite;

pub use check::Check;
pub use fixture::Fixture;
pub use junit::junit;
pub use record::RunRecord;
pub use report::{Report, RunResult, TaskReport, table};
pub use run::{EvalAgent, EvalOptions, TaskRun};
pub use suite::{Defaults, Suite, Task};
