//! Budgets across a takeover (issue 29, part 3): a run whose worker stops mid-run is
//! continued by a worker of another coordinator, whose counters start from what the
//! first recorded — `max_turns` and `max_cost` hold over the whole run, and the run
//! reports what both workers used.
//!
//! The first worker is stopped while its provider call hangs: its coordinator shuts
//! down and gives the claim up, as a worker dying mid-call leaves the run (the call
//! made, its answer never seen).

use std::sync::Arc;
use std::time::Duration;

use oxydra_coordinator::{
    BlueprintConfig, BlueprintLimits, Coordinator, CoordinatorConfig, Run, RunStatus, RunStore,
    RunnerDeps,
};
use oxydra_memory::Memory;
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, PostgresRunStore};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::ToolRegistry;
use oxydra_types::Usage;
use serde_json::json;

/// gpt-4o-mini's price: $0.15 per million input tokens, $0.60 per million output.
const MODEL: &str = "gpt-4o-mini";
/// Input tokens of every scripted call (and ten output tokens).
const TOKENS: u64 = 100_000;
/// What every scripted call costs: $0.015 + $0.000006.
const CALL_COST: f64 = 0.015_006;

/// A turn calling a tool (unknown: its error goes back to the model and the run goes on).
fn tool_turn(n: usize) -> ScriptedTurn {
    ScriptedTurn::tool_call(&format!("call_{n}"), "lookup", &format!(r#"{{"n":{n}}}"#))
        .with_usage(Usage::new(TOKENS, 10, 0))
}

/// A coordinator on the test database whose `worker` agent asks `provider`, keeps its
/// sessions in the database and runs under `limits`.
async fn coordinator(
    test: &TestDatabase,
    provider: &Arc<ScriptedProvider>,
    limits: BlueprintLimits,
) -> Coordinator {
    let db = test.connect().await;
    let store: Arc<dyn RunStore> = Arc::new(PostgresRunStore::new(db.clone()));
    let memory: Arc<dyn Memory> = Arc::new(PostgresMemory::new(db, Default::default()));
    let mut deps = RunnerDeps::new(ToolRegistry::new(), ".").with_provider(provider.clone(), MODEL);
    deps.memory = Some(memory);
    let mut blueprint = BlueprintConfig::agent("worker", "Works", "You work.");
    blueprint.limits = Some(limits);
    let config = CoordinatorConfig {
        run_lease_ttl_ms: 300,
        ..CoordinatorConfig::default()
    };
    Coordinator::with_deps_and_store(config, vec![blueprint], deps, store)
        .await
        .unwrap()
}

/// Starts a run on a first coordinator whose provider answers `answered` tool turns
/// and then hangs; once the hanging call is made, checks the usage recorded so far and
/// stops that coordinator. Returns the run's id.
async fn run_until_the_first_worker_stops(
    test: &TestDatabase,
    answered: usize,
    limits: BlueprintLimits,
) -> String {
    let mut turns: Vec<ScriptedTurn> = (0..answered).map(tool_turn).collect();
    turns.push(ScriptedTurn::HangAfter(Vec::new()));
    let first = Arc::new(ScriptedProvider::new(turns));
    let a = coordinator(test, &first, limits).await;
    let run_id = a
        .create_run("worker", json!({"prompt": "work"}))
        .await
        .unwrap()
        .run_id;
    for _ in 0..500 {
        if first.requests().len() > answered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        first.requests().len(),
        answered + 1,
        "the hanging call was made"
    );
    // What the first worker used is in the run's row while it runs: every answered
    // call, and the hanging one counted as a turn.
    let mid = a.get_run(&run_id).await.unwrap();
    assert_eq!(mid.status, RunStatus::Running, "{mid:?}");
    assert_eq!(mid.usage.turns, answered as u32 + 1, "{mid:?}");
    assert_eq!(mid.usage.input_tokens, answered as u64 * TOKENS, "{mid:?}");
    a.shutdown().await;
    run_id
}

/// Continues run `run_id` on a second coordinator whose provider plays `turns`; the
/// ended run and that provider.
async fn take_over(
    test: &TestDatabase,
    run_id: &str,
    turns: Vec<ScriptedTurn>,
    limits: BlueprintLimits,
) -> (Run, Arc<ScriptedProvider>) {
    let second = Arc::new(ScriptedProvider::new(turns));
    let b = coordinator(test, &second, limits).await;
    let run = b
        .wait_for_run(run_id, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(run.status.is_terminal(), "{run:?}");
    b.shutdown().await;
    (run, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_run_stops_at_max_turns_counted_over_both_workers() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let limits = BlueprintLimits {
        max_turns: Some(4),
        ..BlueprintLimits::default()
    };
    // The first worker made three calls (two answered); one of four is left.
    let run_id = run_until_the_first_worker_stops(&test, 2, limits.clone()).await;
    let (run, second) = take_over(&test, &run_id, (10..20).map(tool_turn).collect(), limits).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    let error = run.error.clone().unwrap();
    assert_eq!(error.kind, "budget_exceeded", "{error:?}");
    assert!(error.message.contains("max_turns"), "{error:?}");
    assert_eq!(second.requests().len(), 1, "only the turn left was taken");
    assert_eq!(run.usage.turns, 4);
    assert_eq!(run.usage.input_tokens, 3 * TOKENS, "{:?}", run.usage);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_run_stops_at_max_cost_counted_over_both_workers() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    // About $0.03 spent by the first worker; the second may spend $0.02 more: its
    // second call passes the budget.
    let limits = BlueprintLimits {
        max_cost: Some(0.05),
        ..BlueprintLimits::default()
    };
    let run_id = run_until_the_first_worker_stops(&test, 2, limits.clone()).await;
    let (run, second) = take_over(&test, &run_id, (10..20).map(tool_turn).collect(), limits).await;
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
    let error = run.error.clone().unwrap();
    assert_eq!(error.kind, "budget_exceeded", "{error:?}");
    // The run's own budget stopped it, counting the first worker's spending.
    assert!(
        error
            .message
            .contains("spent $0.060024 of a $0.050000 budget"),
        "{error:?}"
    );
    assert_eq!(second.requests().len(), 2);
    // The run's usage is the sum of what both workers' calls used.
    assert_eq!(run.usage.turns, 5);
    assert_eq!(run.usage.input_tokens, 4 * TOKENS);
    assert_eq!(run.usage.output_tokens, 40);
    assert!(
        (run.usage.cost - 4.0 * CALL_COST).abs() < 1e-9,
        "{:?}",
        run.usage
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_over_run_reports_what_both_workers_used() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let limits = BlueprintLimits::default();
    let run_id = run_until_the_first_worker_stops(&test, 2, limits.clone()).await;
    let answer = ScriptedTurn::text("done").with_usage(Usage::new(TOKENS, 10, 0));
    let (run, second) = take_over(&test, &run_id, vec![answer], limits).await;
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(second.requests().len(), 1);
    let result = run.result.clone().unwrap();
    assert_eq!(result["text"], "done");
    // Three answered calls (two on the first worker), four turns counted.
    assert_eq!(result["turns"], 4, "{result}");
    assert_eq!(result["usage"]["input_tokens"], 3 * TOKENS, "{result}");
    assert_eq!(result["usage"]["output_tokens"], 30, "{result}");
    let cost = result["cost"].as_f64().unwrap();
    assert!((cost - 3.0 * CALL_COST).abs() < 1e-9, "{result}");
    // The run's usage fields say the same.
    assert_eq!(run.usage.turns, 4);
    assert_eq!(run.usage.input_tokens, 3 * TOKENS);
    assert_eq!(run.usage.output_tokens, 30);
    assert!((run.usage.cost - cost).abs() < 1e-12, "{:?}", run.usage);
}
