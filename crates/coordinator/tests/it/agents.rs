//! AI agent runs with a scripted provider, the orchestration tools (an AI correcting
//! its parameters from the 400 body) and blueprint loading errors (a cost budget on an
//! unpriced model among them).

use crate::support;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::CoordinatorHandle;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{SafetyTier, ToolSchema};
use tokio::sync::Semaphore;

use oxydra_coordinator::{
    BlueprintConfig, BlueprintLimits, Coordinator, CoordinatorConfig, CoordinatorError, RunnerDeps,
    StepConfig,
};
use oxydra_provider::{ModelPrice, PricingTable, ScriptedProvider, ScriptedTurn};
use oxydra_types::MessageRole;
use serde_json::{Value, json};
use support::{Served, registry, standard_blueprints};

/// Read-only (so it does not clear the dedupe cache): lets the gated child run
/// `run_id` through and waits (up to 1 s) for it to end.
struct FinishChild {
    release: Arc<Semaphore>,
    coordinator: Arc<OnceLock<CoordinatorHandle>>,
}

#[async_trait]
impl Tool for FinishChild {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "finish_child",
            "Lets the child run finish",
            json!({"type": "object", "properties": {"run_id": {"type": "string"}}}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.release.add_permits(1);
        let coordinator = self.coordinator.get().unwrap().upgrade().unwrap();
        let run = coordinator
            .wait_for_run(args["run_id"].as_str().unwrap(), Duration::from_secs(1))
            .await
            .unwrap();
        Ok(ToolOutput::text(run.status.as_str()))
    }
}

fn researcher_with_echo() -> BlueprintConfig {
    let mut researcher = BlueprintConfig::agent(
        "researcher",
        "Research assistant",
        "You research questions.",
    );
    researcher.tools = Some(vec!["echo".into()]);
    researcher
}

#[tokio::test]
async fn an_ai_agent_run_uses_the_blueprint_prompt_tools_and_provider() {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "echo", r#"{"text":"looked it up"}"#),
        ScriptedTurn::text("The answer is 42."),
    ]));
    let deps = RunnerDeps::new(registry(vec![]), ".").with_provider(provider.clone(), "test-model");
    let server = Served::with(
        CoordinatorConfig::default(),
        vec![researcher_with_echo()],
        deps,
    )
    .await;
    let (status, created) = server
        .post_run(
            json!({"agent_name": "researcher", "parameters": {"prompt": "What is the answer?"}}),
        )
        .await;
    assert_eq!(status, 201);
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["result"]["text"], "The answer is 42.");
    assert_eq!(run["result"]["turns"], 2);
    let run_id = created["run_id"].as_str().unwrap();
    assert_eq!(
        run["result"]["session_id"],
        run_id.replacen("run_", "ses_", 1)
    );

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].model, "test-model");
    let tools: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, vec!["echo"]);
    let system = requests[0]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::System)
        .unwrap();
    assert!(system.text().contains("You research questions."));
    assert!(
        requests[0]
            .messages
            .iter()
            .any(|m| m.role == MessageRole::User && m.text() == "What is the answer?")
    );
    let tool_result = requests[1]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(tool_result.text(), "looked it up");
    server.stop().await;
}

#[tokio::test]
async fn an_agent_runs_calls_get_secret_handles_and_never_show_their_values() {
    use oxydra_executor::{SecretHandle, SecretHandles};
    const VALUE: &str = "svc-Zt9wQ3mR7vK2xLp8Nd4";
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("call_1", "echo", r#"{"text":"key={{secret:SERVICE}}"}"#),
        ScriptedTurn::text("done"),
    ]));
    let handles = SecretHandles::default().with(
        "SERVICE",
        SecretHandle::new(VALUE, ["echo"], Vec::<String>::new()),
    );
    let deps = RunnerDeps::new(registry(vec![]), ".")
        .with_provider(provider.clone(), "test-model")
        .with_secret_handles(handles);
    let server = Served::with(
        CoordinatorConfig::default(),
        vec![researcher_with_echo()],
        deps,
    )
    .await;
    let (status, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "go"}}))
        .await;
    assert_eq!(status, 201);
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    // The tool echoed the value it was given; the model got it scrubbed by value.
    let requests = provider.requests();
    let tool_result = requests[1]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(tool_result.text(), "key=[REDACTED]");
    let everything = format!("{requests:?} {run}");
    assert!(!everything.contains(VALUE), "{everything}");
    server.stop().await;
}

#[tokio::test]
async fn an_orchestrating_agent_corrects_itself_from_the_validation_error() {
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("c1", "list_agent_blueprints", "{}"),
        ScriptedTurn::tool_call(
            "c2",
            "start_agent_run",
            r#"{"agent_name":"web-crawler","parameters":{"url":"not-a-url"}}"#,
        ),
        ScriptedTurn::tool_call(
            "c3",
            "start_agent_run",
            r#"{"agent_name":"web-crawler","parameters":{"url":"https://example.com"}}"#,
        ),
        ScriptedTurn::text("Started the crawl."),
    ]));
    let mut orchestrator =
        BlueprintConfig::agent("orchestrator", "Delegates", "You delegate work.");
    orchestrator.tools = Some(vec![
        "list_agent_blueprints".into(),
        "start_agent_run".into(),
        "get_agent_run".into(),
    ]);
    let mut blueprints = standard_blueprints();
    blueprints.push(orchestrator);
    let deps = RunnerDeps::new(registry(vec![]), ".").with_provider(provider.clone(), "m");
    let server = Served::with(CoordinatorConfig::default(), blueprints, deps).await;
    let (_, created) = server
        .post_run(
            json!({"agent_name": "orchestrator", "parameters": {"prompt": "Crawl example.com"}}),
        )
        .await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");

    let requests = provider.requests();
    let tool_text = |request: usize, call: &str| -> String {
        requests[request]
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_ref().map(|id| id.as_str()) == Some(call))
            .unwrap()
            .text()
            .to_owned()
    };
    // The listing the model saw is the API's.
    let (_, api_listing) = server.get("/agents").await;
    let listing: Value = serde_json::from_str(&tool_text(1, "c1")).unwrap();
    assert_eq!(listing, api_listing);
    // The refusal carries the validation body, schema included.
    let refusal = tool_text(2, "c2");
    assert!(refusal.starts_with("Tool execution failed: "), "{refusal}");
    let body: Value =
        serde_json::from_str(refusal.trim_start_matches("Tool execution failed: ")).unwrap();
    assert_eq!(body["error"], "parameter_validation_failed");
    assert_eq!(
        body["validation_errors"][0]["schema_path"],
        "properties.url.format"
    );
    assert_eq!(body["parameters_schema"], support::crawler_schema());
    // The corrected call started a crawl, which completed.
    let started: Value = serde_json::from_str(&tool_text(3, "c3")).unwrap();
    assert_eq!(started["status"], "pending");
    let crawl = server.finished(started["run_id"].as_str().unwrap()).await;
    assert_eq!(crawl["agent_name"], "web-crawler");
    assert_eq!(crawl["status"], "completed");
    server.stop().await;
}

#[tokio::test]
async fn polling_get_agent_run_is_never_served_a_stale_deduped_answer() {
    let (gate_tool, mut control) = support::gate();
    let handle = Arc::new(OnceLock::new());
    let finish = FinishChild {
        release: Arc::clone(&control.release),
        coordinator: Arc::clone(&handle),
    };
    let provider = Arc::new(ScriptedProvider::new(vec![]));
    let mut orchestrator = BlueprintConfig::agent("orchestrator", "Polls", "You poll runs.");
    orchestrator.tools = Some(vec!["get_agent_run".into(), "finish_child".into()]);
    let deps = RunnerDeps::new(registry(vec![Arc::new(gate_tool), Arc::new(finish)]), ".")
        .with_provider(provider.clone(), "m");
    let server = Served::with(
        CoordinatorConfig::default(),
        vec![support::gate_blueprint(), orchestrator],
        deps,
    )
    .await;
    handle.set(server.coordinator.handle()).unwrap();
    let child = server
        .coordinator
        .create_run("waiter", json!({"label": "child"}))
        .await
        .unwrap();
    control.entered.recv().await.unwrap();

    // The same get_agent_run call twice; the child ends in between.
    let poll = json!({"run_id": child.run_id}).to_string();
    provider.push_turn(ScriptedTurn::tool_call("p1", "get_agent_run", &poll));
    provider.push_turn(ScriptedTurn::tool_call("f1", "finish_child", &poll));
    provider.push_turn(ScriptedTurn::tool_call("p2", "get_agent_run", &poll));
    provider.push_turn(ScriptedTurn::text("The child finished."));
    let created = server
        .coordinator
        .create_run("orchestrator", json!({"prompt": "Poll the child"}))
        .await
        .unwrap();
    let run = server.finished(&created.run_id).await;
    assert_eq!(run["status"], "completed", "{run}");

    let requests = provider.requests();
    let last = requests.last().unwrap();
    let tool_text = |call: &str| -> String {
        last.messages
            .iter()
            .find(|m| m.tool_call_id.as_ref().map(|id| id.as_str()) == Some(call))
            .unwrap()
            .text()
            .to_owned()
    };
    assert_eq!(tool_text("f1"), "completed");
    let first: Value = serde_json::from_str(&tool_text("p1")).unwrap();
    assert_eq!(first["status"], "running");
    let second = tool_text("p2");
    let second: Value = serde_json::from_str(&second)
        .unwrap_or_else(|_| panic!("not a fresh get_agent_run answer: {second}"));
    assert_eq!(second["status"], "completed", "{second}");
    server.stop().await;
}

#[tokio::test]
async fn named_providers_models_and_limits_apply_per_blueprint() {
    let default = Arc::new(ScriptedProvider::new(vec![]));
    let alt = Arc::new(ScriptedProvider::new(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"a"}"#),
        ScriptedTurn::tool_call("c2", "echo", r#"{"text":"b"}"#),
    ]));
    let mut capped = researcher_with_echo();
    capped.provider = Some("alt".into());
    capped.model = Some("alt-model".into());
    capped.limits = Some(BlueprintLimits {
        max_turns: Some(1),
        ..BlueprintLimits::default()
    });
    let deps = RunnerDeps::new(registry(vec![]), ".")
        .with_provider(default.clone(), "default-model")
        .with_named_provider("alt", alt.clone());
    let server = Served::with(CoordinatorConfig::default(), vec![capped], deps).await;
    let (_, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "go"}}))
        .await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["error"]["kind"], "budget_exceeded");
    assert!(default.requests().is_empty());
    assert_eq!(alt.requests()[0].model, "alt-model");
    server.stop().await;
}

#[tokio::test]
async fn an_agent_without_a_provider_fails_with_a_config_error() {
    let deps = RunnerDeps::new(registry(vec![]), ".");
    let server = Served::with(CoordinatorConfig::default(), standard_blueprints(), deps).await;
    let (_, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "hi"}}))
        .await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "failed");
    assert_eq!(run["error"]["kind"], "config");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no provider")
    );
    server.stop().await;
}

async fn load(blueprints: Vec<BlueprintConfig>) -> Result<Coordinator, CoordinatorError> {
    Coordinator::new(
        CoordinatorConfig::default(),
        blueprints,
        RunnerDeps::new(registry(vec![]), "."),
    )
    .await
}

#[tokio::test]
async fn invalid_blueprints_are_refused_at_load_with_clear_errors() {
    let bad_schema = BlueprintConfig::deterministic(
        "bad-schema",
        "",
        json!({"type": "object", "required": "url"}),
        vec![StepConfig::new("echo", json!({"text": "x"}))],
    );
    let error = load(vec![bad_schema]).await.unwrap_err();
    assert!(
        matches!(error, CoordinatorError::InvalidSchema { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("bad-schema") && text.contains("required"),
        "{text}"
    );

    let unknown_tool = BlueprintConfig::deterministic(
        "uses-missing",
        "",
        json!({"type": "object"}),
        vec![StepConfig::new("teleport", json!({}))],
    );
    let text = load(vec![unknown_tool]).await.unwrap_err().to_string();
    assert!(text.contains("teleport") && text.contains("echo"), "{text}");

    let mut agent = BlueprintConfig::agent("a", "", "p");
    agent.tools = Some(vec!["nope".into()]);
    assert!(matches!(
        load(vec![agent]).await.unwrap_err(),
        CoordinatorError::UnknownTool { .. }
    ));

    let twice = vec![
        BlueprintConfig::agent("same", "", "p"),
        BlueprintConfig::agent("same", "", "q"),
    ];
    assert!(matches!(
        load(twice).await.unwrap_err(),
        CoordinatorError::DuplicateBlueprint { .. }
    ));

    let placeholder = BlueprintConfig::deterministic(
        "typo",
        "",
        support::crawler_schema(),
        vec![StepConfig::new("echo", json!({"text": "{{ulr}}"}))],
    );
    let text = load(vec![placeholder]).await.unwrap_err().to_string();
    assert!(text.contains("typo") && text.contains("{{ulr}}"), "{text}");
}

#[tokio::test]
async fn a_cost_budget_on_an_unpriced_model_is_refused_at_load_naming_the_price_to_add() {
    let provider = Arc::new(ScriptedProvider::new(vec![ScriptedTurn::text("Hi.")]));
    let deps =
        || RunnerDeps::new(registry(vec![]), ".").with_provider(provider.clone(), "llama3.2");
    let budgeted = || {
        let mut agent = researcher_with_echo();
        agent.limits = Some(BlueprintLimits {
            max_cost: Some(0.5),
            ..BlueprintLimits::default()
        });
        agent
    };
    let refused = |error: CoordinatorError| {
        assert!(
            matches!(&error, CoordinatorError::UnpricedModel { blueprint, model }
                if blueprint == "researcher" && model == "llama3.2"),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("blueprint `researcher`"), "{text}");
        assert!(text.contains(r#"[pricing."llama3.2"]"#), "{text}");
    };
    let config = CoordinatorConfig::default;
    // The blueprint's own budget, and the default one it inherits.
    refused(
        Coordinator::new(config(), vec![budgeted()], deps())
            .await
            .unwrap_err(),
    );
    let mut inherited = deps();
    inherited.limits.max_cost = Some(0.5);
    refused(
        Coordinator::new(config(), vec![researcher_with_echo()], inherited)
            .await
            .unwrap_err(),
    );
    // A model the blueprint names is the one judged.
    let mut named = budgeted();
    named.model = Some("gpt-4o-mini".into());
    Coordinator::new(config(), vec![named], deps())
        .await
        .unwrap()
        .shutdown()
        .await;
    // Without a budget, or with a price given, it loads; a priced run counts its cost.
    Coordinator::new(config(), vec![researcher_with_echo()], deps())
        .await
        .unwrap()
        .shutdown()
        .await;
    let mut prices = PricingTable::builtin();
    prices.insert("llama3.2", ModelPrice::new(1.0, 1.0, 1.0));
    let server = Served::with(config(), vec![budgeted()], deps().with_pricing(prices)).await;
    let (_, created) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "hi"}}))
        .await;
    let run = server.finished(created["run_id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["result"]["text"], "Hi.");
    server.stop().await;
}

#[tokio::test]
async fn unusable_coordinator_settings_are_refused() {
    for config in [
        CoordinatorConfig {
            max_concurrent_runs: 0,
            ..CoordinatorConfig::default()
        },
        CoordinatorConfig {
            auth_token: Some("  ".into()),
            ..CoordinatorConfig::default()
        },
        CoordinatorConfig {
            body_limit_bytes: 0,
            ..CoordinatorConfig::default()
        },
    ] {
        let error = Coordinator::new(config, vec![], RunnerDeps::new(registry(vec![]), "."))
            .await
            .unwrap_err();
        assert!(
            matches!(error, CoordinatorError::InvalidConfig { .. }),
            "{error:?}"
        );
    }
}
