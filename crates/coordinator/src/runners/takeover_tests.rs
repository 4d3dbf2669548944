//! The agent runner on SQLite (run store and session memory), continuing a run a first
//! execution left mid-call, as a worker taking a run over does: the second execution
//! starts from the usage the first recorded, so `max_turns` and `max_cost` hold over
//! the whole run and the result reports both.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use oxydra_executor::ToolExecutorConfig;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{Provider, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::RuntimeLimits;
use oxydra_tools::ToolRegistry;
use oxydra_types::{RunId, Usage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agent::{AgentPlan, AgentRunner};
use super::{RunOutcome, RunRequest};
use crate::blueprint::Blueprint;
use crate::config::BlueprintConfig;
use crate::run::{Run, RunError, RunLineage};
use crate::run_ledger::RunLedger;
use crate::run_usage::RunUsage;
use crate::sqlite::SqliteRunStore;
use crate::store::RunStore;

/// Input tokens of every scripted call: $0.015 with gpt-4o-mini.
const TOKENS: u64 = 100_000;

fn tool_turn(n: usize) -> ScriptedTurn {
    ScriptedTurn::tool_call(&format!("call_{n}"), "lookup", &format!(r#"{{"n":{n}}}"#))
        .with_usage(Usage::new(TOKENS, 0, 0))
}

/// A store and a memory shared by both executions, and the running run `r1`.
struct Setup {
    store: Arc<dyn RunStore>,
    memory: Arc<dyn Memory>,
    blueprint: Arc<Blueprint>,
    parameters: Value,
}

async fn setup() -> Setup {
    let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(None).unwrap());
    let memory: Arc<dyn Memory> = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let blueprint = Arc::new(
        Blueprint::from_config(BlueprintConfig::agent("worker", "Works", "You work.")).unwrap(),
    );
    store
        .insert_run(Run::pending(
            "r1",
            "worker",
            json!({"prompt": "work"}),
            RunLineage::root("r1"),
        ))
        .await
        .unwrap();
    let parameters = store.start_run("r1").await.unwrap().unwrap();
    Setup {
        store,
        memory,
        blueprint,
        parameters,
    }
}

impl Setup {
    fn runner(&self, provider: &Arc<ScriptedProvider>, limits: RuntimeLimits) -> AgentRunner {
        let provider: Arc<dyn Provider> = provider.clone();
        let plan = AgentPlan {
            registry: Arc::new(ToolRegistry::new()),
            rules: Vec::new(),
            provider: Ok(provider),
            model: Ok("gpt-4o-mini".into()),
            limits,
            system_prompt: None,
            pricing: None,
        };
        AgentRunner::new(
            HashMap::from([("worker".to_owned(), plan)]),
            super::agent::AgentShared {
                executor_config: ToolExecutorConfig::default(),
                permission_broker: None,
                workspace_root: PathBuf::from("."),
                memory: Some(Arc::clone(&self.memory)),
                hooks: Vec::new(),
                scrubber: oxydra_scrubbing::Scrubber::new(),
                secret_handles: oxydra_executor::SecretHandles::default(),
                provenance: oxydra_executor::ProvenancePolicy::default(),
                checkpoints: None,
            },
        )
    }

    fn request(&self, resumed: bool, used: RunUsage, cancel: &CancellationToken) -> RunRequest {
        RunRequest {
            run_id: RunId::from("r1"),
            blueprint: Arc::clone(&self.blueprint),
            parameters: self.parameters.clone(),
            resumed,
            decisions: Vec::new(),
            used,
            ledger: RunLedger::new(Arc::clone(&self.store), "r1"),
            cancel: cancel.clone(),
        }
    }

    async fn usage(&self) -> RunUsage {
        self.store.get_run("r1").await.unwrap().unwrap().usage
    }

    /// A first execution answered `answered` tool turns, then is stopped during its
    /// next (hanging) call.
    async fn first_execution_stops(&self, answered: usize, limits: RuntimeLimits) {
        let mut turns: Vec<ScriptedTurn> = (0..answered).map(tool_turn).collect();
        turns.push(ScriptedTurn::HangAfter(Vec::new()));
        let provider = Arc::new(ScriptedProvider::new(turns));
        let runner = self.runner(&provider, limits);
        let cancel = CancellationToken::new();
        let request = self.request(false, RunUsage::default(), &cancel);
        let execution = runner.execute(request);
        tokio::pin!(execution);
        let hung = async {
            while provider.requests().len() <= answered {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::select! {
            outcome = &mut execution => panic!("the first execution ended: {outcome:?}"),
            () = hung => {}
        }
        let recorded = self.usage().await;
        assert_eq!(recorded.turns, answered as u32 + 1, "{recorded:?}");
        assert_eq!(recorded.input_tokens, answered as u64 * TOKENS);
        cancel.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(5), execution)
            .await
            .unwrap();
        assert_eq!(stopped.unwrap_err(), RunError::cancelled());
    }

    /// A second execution, taking the run over from what the store recorded.
    async fn take_over(
        &self,
        turns: Vec<ScriptedTurn>,
        limits: RuntimeLimits,
    ) -> (Result<Value, RunError>, Arc<ScriptedProvider>) {
        let provider = Arc::new(ScriptedProvider::new(turns));
        let runner = self.runner(&provider, limits);
        let used = self.usage().await;
        let outcome = runner
            .execute(self.request(true, used, &CancellationToken::new()))
            .await
            .map(|outcome| match outcome {
                RunOutcome::Finished(result) => result,
                other => panic!("the run did not finish: {other:?}"),
            });
        (outcome, provider)
    }
}

#[tokio::test]
async fn max_turns_holds_over_both_executions() {
    let setup = setup().await;
    let limits = {
        let mut custom = RuntimeLimits::default();
        custom.max_turns = 4;
        custom
    };
    setup.first_execution_stops(2, limits.clone()).await;
    let (outcome, second) = setup
        .take_over((10..20).map(tool_turn).collect(), limits)
        .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.kind, "budget_exceeded", "{error:?}");
    assert!(error.message.contains("max_turns"), "{error:?}");
    assert_eq!(second.requests().len(), 1);
    let usage = setup.usage().await;
    assert_eq!((usage.turns, usage.input_tokens), (4, 3 * TOKENS));
}

#[tokio::test]
async fn max_cost_holds_over_both_executions() {
    let setup = setup().await;
    let limits = {
        let mut custom = RuntimeLimits::default();
        custom.max_cost = Some(0.05);
        custom
    };
    setup.first_execution_stops(2, limits.clone()).await;
    let (outcome, second) = setup
        .take_over((10..20).map(tool_turn).collect(), limits)
        .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.kind, "budget_exceeded", "{error:?}");
    assert!(
        error
            .message
            .contains("spent $0.060000 of a $0.050000 budget"),
        "{error:?}"
    );
    assert_eq!(second.requests().len(), 2);
    let usage = setup.usage().await;
    assert_eq!((usage.turns, usage.input_tokens), (5, 4 * TOKENS));
    assert!((usage.cost - 0.06).abs() < 1e-9, "{usage:?}");
}

#[tokio::test]
async fn the_result_reports_both_executions() {
    let setup = setup().await;
    setup
        .first_execution_stops(2, RuntimeLimits::default())
        .await;
    let answer = ScriptedTurn::text("done").with_usage(Usage::new(TOKENS, 0, 0));
    let (outcome, _) = setup
        .take_over(vec![answer], RuntimeLimits::default())
        .await;
    let result = outcome.unwrap();
    assert_eq!(result["text"], "done");
    assert_eq!(result["turns"], 4, "{result}");
    assert_eq!(result["usage"]["input_tokens"], 3 * TOKENS, "{result}");
    let cost = result["cost"].as_f64().unwrap();
    assert!((cost - 0.045).abs() < 1e-9, "{result}");
    let usage = setup.usage().await;
    assert_eq!((usage.turns, usage.input_tokens), (4, 3 * TOKENS));
    assert!((usage.cost - cost).abs() < 1e-12, "{usage:?}");
}
