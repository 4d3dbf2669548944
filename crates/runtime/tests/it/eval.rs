//! `oxydra_runtime::eval` with real runtimes on scripted providers: the rates a test
//! asserts on, the concurrency cap, and the fresh workspace of every run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_runtime::AgentRuntime;
use oxydra_runtime::eval::{
    Check, EvalAgent, EvalOptions, Fixture, RunRecord, Suite, Task, TaskRun,
};
use oxydra_types::SessionId;

use crate::common::EchoTool;

/// Even runs call `echo` and answer 42; odd runs guess.
struct Alternating;

#[async_trait::async_trait]
impl EvalAgent for Alternating {
    async fn run(&self, run: TaskRun<'_>) -> Result<RunRecord, String> {
        let turns = if run.index.is_multiple_of(2) {
            vec![
                ScriptedTurn::tool_call("c1", "echo", r#"{"text":"42"}"#),
                ScriptedTurn::text("The answer is 42."),
            ]
        } else {
            vec![ScriptedTurn::text("No idea.")]
        };
        let runtime = AgentRuntime::builder()
            .provider(Arc::new(ScriptedProvider::new(turns)))
            .model("scripted")
            .tool(EchoTool)
            .build()
            .map_err(|e| e.to_string())?;
        let session = SessionId::generate();
        let outcome = runtime
            .session(&session)
            .prompt(run.task.prompt.clone())
            .cancel(run.cancel)
            .await
            .map_err(|e| e.to_string())?;
        let messages = runtime
            .session_messages(&session)
            .await
            .map_err(|e| e.to_string())?;
        Ok(RunRecord::from_session(&outcome, &messages))
    }
}

#[tokio::test]
async fn a_test_can_assert_on_the_success_rate_of_an_agent() {
    let task = Task::new("answer", "What is the answer?")
        .check(Check::AnswerContains("42".into()))
        .check(Check::ToolCalled {
            name: "echo".into(),
            count: Some(1),
        });
    let suite = Suite::new("rates", vec![task]);
    let mut options = EvalOptions::default();
    options.runs = Some(3);
    let report = suite.run(&Alternating, &options, &|_, _| {}).await.unwrap();
    let task = report.task("answer").unwrap();
    assert_eq!(task.successes, 2);
    assert!((task.success_rate - 2.0 / 3.0).abs() < 1e-9);
    assert!(task.spread > 0.4, "{}", task.spread);
    assert_eq!(task.tool_calls, 2);
    let failed = &task.runs[1];
    assert!(!failed.passed);
    assert!(
        failed
            .failures
            .iter()
            .any(|f| f.starts_with("answer contains \"42\"")),
        "{:?}",
        failed.failures
    );
    assert!(failed.failures.iter().any(|f| f.contains("called 0 times")));
    assert!(report.below(0.9).len() == 2);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["tasks"][0]["successes"], 2);
}

/// Counts runs in flight; the first two meet at a barrier (so two did run at once).
struct Counting {
    now: AtomicUsize,
    most: AtomicUsize,
    barrier: tokio::sync::Barrier,
    seen: std::sync::Mutex<Vec<std::path::PathBuf>>,
}

#[async_trait::async_trait]
impl EvalAgent for Counting {
    async fn run(&self, run: TaskRun<'_>) -> Result<RunRecord, String> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        // The fixture is there, and nothing an earlier run wrote.
        let fixture = std::fs::read_to_string(run.workspace.join("in.txt"));
        let stale = run.workspace.join("out.txt").exists();
        std::fs::write(run.workspace.join("out.txt"), "x").unwrap();
        assert!(!run.store.starts_with(run.workspace));
        self.seen.lock().unwrap().push(run.workspace.to_path_buf());
        if run.index < 2 {
            tokio::time::timeout(Duration::from_secs(5), self.barrier.wait())
                .await
                .map_err(|_| "the first two runs never ran at once".to_owned())?;
        }
        tokio::task::yield_now().await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        let mut record = RunRecord::default();
        record.answer = format!(
            "{}{}",
            fixture.unwrap_or_default(),
            if stale { " stale" } else { "" }
        );
        Ok(record)
    }
}

#[tokio::test]
async fn runs_are_capped_at_parallel_and_each_has_a_fresh_workspace() {
    let files = std::collections::BTreeMap::from([("in.txt".into(), "fixture".to_owned())]);
    let task = Task::new("t", "p")
        .fixture(Fixture::Files(files))
        .check(Check::AnswerMatches(
            regex::Regex::new("^fixture$").unwrap(),
        ))
        .check(Check::FileEquals {
            path: "out.txt".into(),
            content: "x".into(),
        });
    let suite = Suite::new("parallel", vec![task]);
    let agent = Counting {
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        barrier: tokio::sync::Barrier::new(2),
        seen: std::sync::Mutex::new(Vec::new()),
    };
    let mut options = EvalOptions::default();
    options.runs = Some(6);
    options.parallel = 2;
    let report = suite.run(&agent, &options, &|_, _| {}).await.unwrap();
    let task = report.task("t").unwrap();
    assert_eq!(task.successes, 6, "{:?}", task.runs);
    assert_eq!(agent.most.load(Ordering::SeqCst), 2);
    let seen = agent.seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    // Every workspace is gone once its run was judged.
    assert!(seen.iter().all(|path| !path.exists()));
}

#[tokio::test]
async fn a_cancelled_eval_ends_cancelled() {
    let suite = Suite::new(
        "c",
        vec![Task::new("t", "p").check(Check::AnswerContains("x".into()))],
    );
    let options = EvalOptions::default();
    options.cancel.cancel();
    let error = suite
        .run(&Alternating, &options, &|_, _| {})
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "cancelled");
}
