//! Runs end to end: deterministic pipelines, the concurrency bound, cancellation,
//! shutdown and recovery after a restart.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunStatus, RunnerDeps, StepConfig,
};
use oxydra_tools::{BuiltinToolsConfig, Tool, ToolContext, ToolError, ToolOutput, builtin_tool};
use oxydra_types::{CallId, SafetyTier, ToolSchema};
use serde_json::{Value, json};
use support::{Served, gate, gate_blueprint, registry, standard_blueprints};
use tokio_util::sync::CancellationToken;

const LIVE_KEY: &str = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e";
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";

/// Fails with a secret in its error message.
struct Leaky;

#[async_trait]
impl Tool for Leaky {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("leaky", "Fails, leaking a key", json!({"type": "object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed(format!(
            "upstream refused key {AWS_KEY} (api_key={LIVE_KEY})"
        )))
    }
}

fn assert_no_secrets(text: &str) {
    assert!(!text.contains(LIVE_KEY), "{text}");
    assert!(!text.contains(AWS_KEY), "{text}");
}

#[tokio::test]
async fn a_deterministic_run_renders_its_steps_and_stores_the_result() {
    let mut blueprints = standard_blueprints();
    blueprints.push(BlueprintConfig::deterministic(
        "two-steps",
        "Echoes twice",
        json!({"type": "object", "required": ["name", "count"],
            "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}),
        vec![
            StepConfig::new("echo", json!({"text": "hello {{name}}"})),
            StepConfig::new(
                "echo",
                json!({"text": "{{name}}", "extra": {"n": "{{count}}"}}),
            ),
        ],
    ));
    let deps = RunnerDeps::new(registry(vec![]), ".");
    let server = Served::with(CoordinatorConfig::default(), blueprints, deps).await;

    let (status, created) = server
        .post_run(json!({"agent_name": "two-steps", "parameters": {"name": "Ada", "count": 3}}))
        .await;
    assert_eq!(status, 201, "{created}");
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    let steps = run["result"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["output"], "hello Ada");
    // A whole-string placeholder keeps the integer type.
    assert_eq!(
        steps[1]["structured"]["args"],
        json!({"text": "Ada", "extra": {"n": 3}})
    );
    assert_eq!(run["result"]["output"], "Ada");
    assert!(run["started_at"].as_i64().unwrap() <= run["finished_at"].as_i64().unwrap());

    // The optional `depth` is absent: the embedded placeholder becomes empty text.
    let (_, created) = server
        .post_run(
            json!({"agent_name": "web-crawler", "parameters": {"url": "https://a.example/x"}}),
        )
        .await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(
        run["result"]["output"],
        "fetch https://a.example/x to depth "
    );
    server.stop().await;
}

#[tokio::test]
async fn step_outputs_and_errors_are_scrubbed_before_they_are_stored_and_served() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("secrets.env"),
        format!("api_key = \"{LIVE_KEY}\"\naws_access_key_id = {AWS_KEY}\n"),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("coordinator.db");
    let file_read = builtin_tool("file_read", &BuiltinToolsConfig::default()).unwrap();
    let deps = RunnerDeps::new(registry(vec![file_read, Arc::new(Leaky)]), workspace.path());
    let blueprints = vec![
        BlueprintConfig::deterministic(
            "read-secrets",
            "Reads a file with secrets",
            json!({"type": "object"}),
            vec![StepConfig::new("file_read", json!({"path": "secrets.env"}))],
        ),
        BlueprintConfig::deterministic(
            "leak",
            "Reads, then fails with a secret in the error",
            json!({"type": "object"}),
            vec![
                StepConfig::new("file_read", json!({"path": "secrets.env"})),
                StepConfig::new("leaky", json!({})),
            ],
        ),
    ];
    let config = CoordinatorConfig {
        db: Some(db.clone()),
        ..CoordinatorConfig::default()
    };
    let server = Served::with(config, blueprints, deps).await;

    let (_, created) = server.post_run(json!({"agent_name": "read-secrets"})).await;
    let read_id = created["run_id"].as_str().unwrap().to_owned();
    let run = server.finished(&read_id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let output = run["result"]["output"].as_str().unwrap();
    assert!(output.contains("[REDACTED]"), "{output}");
    assert!(
        run["result"]["steps"][0]["output"]
            .as_str()
            .unwrap()
            .contains("[REDACTED]")
    );
    assert_no_secrets(&run.to_string());

    let (_, created) = server.post_run(json!({"agent_name": "leak"})).await;
    let leak_id = created["run_id"].as_str().unwrap().to_owned();
    let run = server.finished(&leak_id).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["error"]["kind"], "step_failed");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[REDACTED]"),
        "{run}"
    );
    assert_no_secrets(&run.to_string());

    // What the orchestration tool serves is scrubbed as well.
    let get_agent_run = server
        .coordinator
        .agent_tools()
        .into_iter()
        .find(|tool| tool.schema().name == "get_agent_run")
        .unwrap();
    let ctx = ToolContext::new(
        workspace.path(),
        CancellationToken::new(),
        CallId::generate(),
    );
    for id in [&read_id, &leak_id] {
        let served = get_agent_run
            .execute(json!({"run_id": id}), &ctx)
            .await
            .unwrap();
        assert!(served.content.contains("[REDACTED]"), "{}", served.content);
        assert_no_secrets(&served.content);
    }

    // And so is what is in the database.
    let connection = rusqlite::Connection::open(&db).unwrap();
    let mut statement = connection
        .prepare("SELECT COALESCE(result, ''), COALESCE(error, '') FROM coordinator_runs")
        .unwrap();
    let rows: Vec<(String, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 2);
    for (result, error) in rows {
        assert_no_secrets(&result);
        assert_no_secrets(&error);
    }
    server.stop().await;
}

#[tokio::test]
async fn a_failing_step_fails_the_run_with_details() {
    let blueprints = vec![BlueprintConfig::deterministic(
        "fragile",
        "Echoes, then breaks",
        json!({"type": "object"}),
        vec![
            StepConfig::new("echo", json!({"text": "first"})),
            StepConfig::new("broken", json!({})),
            StepConfig::new("echo", json!({"text": "never"})),
        ],
    )];
    let server = Served::with(
        CoordinatorConfig::default(),
        blueprints,
        RunnerDeps::new(registry(vec![]), "."),
    )
    .await;
    let (_, created) = server.post_run(json!({"agent_name": "fragile"})).await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "failed");
    let error = &run["error"];
    assert_eq!(error["kind"], "step_failed");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the disk is on fire"),
        "{error}"
    );
    assert_eq!(error["detail"]["step"], 2);
    assert_eq!(error["detail"]["tool"], "broken");
    assert_eq!(error["detail"]["completed_steps"][0]["output"], "first");
    assert!(run.get("result").is_none());
    server.stop().await;
}

#[tokio::test]
async fn the_worker_pool_never_runs_more_than_its_bound() {
    let (gate_tool, mut control) = gate();
    let deps = RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), ".");
    let config = CoordinatorConfig {
        max_concurrent_runs: 2,
        ..CoordinatorConfig::default()
    };
    let server = Served::with(config, vec![gate_blueprint()], deps).await;
    let mut ids = Vec::new();
    for index in 0..5 {
        let (status, created) = server
            .post_run(json!({"agent_name": "waiter", "parameters": {"label": format!("r{index}")}}))
            .await;
        assert_eq!(status, 201);
        ids.push(created["run_id"].as_str().unwrap().to_owned());
    }
    control.entered.recv().await.unwrap();
    control.entered.recv().await.unwrap();
    // Two are inside; nobody else gets in while they are held.
    assert!(
        tokio::time::timeout(Duration::from_millis(150), control.entered.recv())
            .await
            .is_err()
    );
    let mut statuses = Vec::new();
    for id in &ids {
        let (_, run) = server.get(&format!("/runs/{id}")).await;
        statuses.push(run["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        statuses.iter().filter(|s| *s == "running").count(),
        2,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| *s == "pending").count(),
        3,
        "{statuses:?}"
    );
    control.release.add_permits(5);
    for id in &ids {
        assert_eq!(server.finished(id).await["status"], "completed");
    }
    assert_eq!(control.max_in_flight.load(Ordering::SeqCst), 2);
    control.wait_empty().await;
    server.stop().await;
}

#[tokio::test]
async fn delete_cancels_running_and_pending_runs() {
    let (gate_tool, mut control) = gate();
    let deps = RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), ".");
    let config = CoordinatorConfig {
        max_concurrent_runs: 1,
        ..CoordinatorConfig::default()
    };
    let server = Served::with(config, vec![gate_blueprint()], deps).await;
    let (_, first) = server.post_run(json!({"agent_name": "waiter"})).await;
    let (_, second) = server.post_run(json!({"agent_name": "waiter"})).await;
    let first = first["run_id"].as_str().unwrap().to_owned();
    let second = second["run_id"].as_str().unwrap().to_owned();
    control.entered.recv().await.unwrap();
    assert_eq!(
        server.get(&format!("/runs/{second}")).await.1["status"],
        "pending"
    );

    // Pending: cancelled before it ever runs.
    let (status, run) = server.delete(&format!("/runs/{second}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled");
    assert!(run.get("started_at").is_none());

    // Running: the token reaches the tool, which stops.
    let (status, run) = server.delete(&format!("/runs/{first}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["error"]["kind"], "cancelled");
    control.wait_empty().await;

    // An ended run cannot be cancelled again.
    let (status, body) = server.delete(&format!("/runs/{first}")).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"], "run_not_cancellable");
    assert_eq!(body["status"], "cancelled");
    server.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_interrupts_active_runs() {
    let (gate_tool, mut control) = gate();
    let deps = RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), ".");
    let config = CoordinatorConfig {
        max_concurrent_runs: 1,
        ..CoordinatorConfig::default()
    };
    let server = Served::with(config, vec![gate_blueprint()], deps).await;
    let (_, running) = server.post_run(json!({"agent_name": "waiter"})).await;
    let (_, pending) = server.post_run(json!({"agent_name": "waiter"})).await;
    control.entered.recv().await.unwrap();
    let coordinator = server.coordinator.clone();
    server.stop().await;
    for created in [running, pending] {
        let run = coordinator
            .get_run(created["run_id"].as_str().unwrap())
            .await
            .unwrap();
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.error.unwrap().kind, "interrupted");
    }
    // No new runs once shut down.
    let refused = coordinator.create_run("waiter", json!({})).await;
    assert!(matches!(
        refused,
        Err(oxydra_coordinator::CoordinatorError::ShuttingDown)
    ));
}

#[tokio::test]
async fn runs_left_unfinished_are_failed_as_interrupted_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = CoordinatorConfig {
        db: Some(dir.path().join("coordinator.db")),
        max_concurrent_runs: 1,
        ..CoordinatorConfig::default()
    };
    let (gate_tool, mut control) = gate();
    let first = Coordinator::new(
        config.clone(),
        vec![gate_blueprint()],
        RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), "."),
    )
    .await
    .unwrap();
    let running = first.create_run("waiter", json!({})).await.unwrap();
    let pending = first.create_run("waiter", json!({})).await.unwrap();
    control.entered.recv().await.unwrap();
    assert_eq!(
        first.get_run(&running.run_id).await.unwrap().status,
        RunStatus::Running
    );
    // The process "dies": no shutdown, the worker stays stuck at the gate.
    drop(first);

    let (gate_tool, _control) = gate();
    let second = Coordinator::new(
        config,
        vec![gate_blueprint()],
        RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), "."),
    )
    .await
    .unwrap();
    for created in [&running, &pending] {
        let run = second.get_run(&created.run_id).await.unwrap();
        assert_eq!(run.status, RunStatus::Failed, "{run:?}");
        assert_eq!(run.error.unwrap().kind, "interrupted");
        assert!(run.finished_at.is_some());
    }
    // The old worker finishing late cannot overwrite the recovered state.
    control.release.add_permits(1);
    let listing = second.list_blueprints().await.unwrap();
    assert_eq!(listing.agents.len(), 1);
    second.shutdown().await;
}
