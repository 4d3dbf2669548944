//! The HTTP API against a real server on 127.0.0.1:0: the API's acceptance criteria
//! and every error path answering JSON.

use crate::support;

use oxydra_coordinator::{CoordinatorConfig, RunnerDeps, implicit_prompt_schema};
use serde_json::{Value, json};
use support::{Served, registry, standard_blueprints};

async fn served(config: CoordinatorConfig) -> Served {
    let deps = RunnerDeps::new(registry(vec![]), ".");
    Served::with(config, standard_blueprints(), deps).await
}

#[tokio::test]
async fn criterion_1_listing_includes_type_and_schema_only_for_deterministic() {
    let server = served(CoordinatorConfig::default()).await;
    let (status, body) = server.get("/agents").await;
    assert_eq!(status, 200);
    assert_eq!(
        body["agents"][0],
        json!({"name": "researcher", "type": "agent", "description": "Research assistant"})
    );
    let crawler = &body["agents"][1];
    assert_eq!(crawler["name"], "web-crawler");
    assert_eq!(crawler["type"], "deterministic");
    assert_eq!(crawler["parameters_schema"], support::crawler_schema());
    server.stop().await;
}

#[tokio::test]
async fn criterion_2_valid_parameters_are_accepted_with_201() {
    let server = served(CoordinatorConfig::default()).await;
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "Test"}}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "pending");
    let run_id = body["run_id"].as_str().unwrap();
    assert!(run_id.starts_with("run_"));
    let (status, run) = server.get(&format!("/runs/{run_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(run["agent_name"], "researcher");
    assert_eq!(run["parameters"], json!({"prompt": "Test"}));
    // What the run used so far, over every worker that ran it: nothing yet.
    assert_eq!(
        run["usage"],
        json!({"turns": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0.0})
    );
    server.stop().await;
}

fn assert_seed_body(body: &Value, agent: &str) {
    assert_eq!(body["error"], "parameter_validation_failed");
    assert_eq!(
        body["message"],
        "Parameters do not match agent's parameters_schema"
    );
    assert_eq!(body["agent_name"], agent);
    let errors = body["validation_errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    for error in errors {
        let keys: Vec<_> = error.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, vec!["message", "path", "schema_path"], "{error}");
    }
}

#[tokio::test]
async fn criteria_3_to_5_invalid_parameters_are_refused_with_the_seed_body() {
    let server = served(CoordinatorConfig::default()).await;
    // 3: empty parameters.
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {}}))
        .await;
    assert_eq!(status, 400);
    assert_seed_body(&body, "researcher");
    // 4: a wrong field instead of prompt.
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"wrong": "field"}}))
        .await;
    assert_eq!(status, 400);
    assert_seed_body(&body, "researcher");
    let errors = body["validation_errors"].as_array().unwrap();
    let missing = errors
        .iter()
        .find(|e| e["schema_path"] == "required")
        .expect("a `required` error");
    assert_eq!(missing["path"], "$");
    assert!(missing["message"].as_str().unwrap().contains("prompt"));
    // 5: the schema is in the body, so the caller can correct itself.
    assert_eq!(&body["parameters_schema"], implicit_prompt_schema());
    // A deterministic blueprint's format error, as the seed shows it.
    let (status, body) = server
        .post_run(json!({"agent_name": "web-crawler", "parameters": {"url": "not-a-url"}}))
        .await;
    assert_eq!(status, 400);
    assert_seed_body(&body, "web-crawler");
    assert_eq!(body["validation_errors"][0]["path"], "$.url");
    assert_eq!(
        body["validation_errors"][0]["schema_path"],
        "properties.url.format"
    );
    assert_eq!(body["parameters_schema"], support::crawler_schema());
    server.stop().await;
}

#[tokio::test]
async fn criterion_6_the_listing_tool_returns_types() {
    let server = served(CoordinatorConfig::default()).await;
    let tools = server.coordinator.agent_tools();
    let list = tools
        .iter()
        .find(|tool| tool.schema().name == "list_agent_blueprints")
        .unwrap();
    let ctx = oxydra_tools::ToolContext::new(
        ".",
        tokio_util::sync::CancellationToken::new(),
        oxydra_types::CallId::from("c1"),
    );
    let output = list.execute(json!({}), &ctx).await.unwrap();
    let listed: Value = serde_json::from_str(&output.content).unwrap();
    let (_, api) = server.get("/agents").await;
    assert_eq!(listed, api);
    assert!(
        listed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["type"].is_string())
    );
    server.stop().await;
}

#[tokio::test]
async fn malformed_and_misshaped_bodies_are_400_json_never_422() {
    let server = served(CoordinatorConfig::default()).await;
    let url = server.url("/runs");
    let (status, body) = server
        .send(
            server
                .client
                .post(&url)
                .header("content-type", "application/json")
                .body("{\"agent_name\": \"researcher\", "),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "malformed_json");
    let (status, body) = server
        .send(
            server
                .client
                .post(&url)
                .header("content-type", "application/json; charset=utf-8")
                .body("not json"),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "malformed_json");
    let (status, body) = server
        .post_run(json!({"parameters": {"prompt": "x"}}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "invalid_request");
    assert!(body["message"].as_str().unwrap().contains("agent_name"));
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "params": {"prompt": "x"}}))
        .await;
    assert_eq!(status, 400);
    assert!(body["message"].as_str().unwrap().contains("params"));
    // Parameters that are not an object at all are a validation failure.
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "parameters": "Test"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "parameter_validation_failed");
    server.stop().await;
}

#[tokio::test]
async fn oversized_bodies_are_413_json() {
    let config = CoordinatorConfig {
        body_limit_bytes: 1024,
        ..CoordinatorConfig::default()
    };
    let server = served(config).await;
    let prompt = "x".repeat(4096);
    let (status, body) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": prompt}}))
        .await;
    assert_eq!(status, 413);
    assert_eq!(body["error"], "payload_too_large");
    assert_eq!(body["limit_bytes"], 1024);
    // A body under the limit still works.
    let (status, _) = server
        .post_run(json!({"agent_name": "researcher", "parameters": {"prompt": "short"}}))
        .await;
    assert_eq!(status, 201);
    server.stop().await;
}

#[tokio::test]
async fn unknown_agents_runs_routes_and_methods_answer_json() {
    let server = served(CoordinatorConfig::default()).await;
    let (status, body) = server
        .post_run(json!({"agent_name": "nobody", "parameters": {"prompt": "x"}}))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "agent_not_found");
    assert_eq!(
        body["available_agents"],
        json!(["researcher", "web-crawler"])
    );
    let (status, body) = server.get("/runs/run_missing").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "run_not_found");
    let (status, body) = server.delete("/runs/run_missing").await;
    assert_eq!(status, 404);
    assert_eq!(body["run_id"], "run_missing");
    let (status, body) = server.get("/nowhere").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "not_found");
    let (status, body) = server.send(server.client.put(server.url("/agents"))).await;
    assert_eq!(status, 405);
    assert_eq!(body["error"], "method_not_allowed");
    server.stop().await;
}

#[tokio::test]
async fn an_undecodable_run_id_is_400_json_for_get_and_delete() {
    let server = served(CoordinatorConfig::default()).await;
    let (status, body) = server.get("/runs/%FF").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_path");
    let (status, body) = server.delete("/runs/%FF%FE").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_path");
    server.stop().await;
}

#[tokio::test]
async fn bearer_auth_guards_every_route_when_configured() {
    let config = CoordinatorConfig {
        auth_token: Some("s3cret-token".into()),
        ..CoordinatorConfig::default()
    };
    let server = served(config).await;
    for (request, label) in [
        (server.client.get(server.url("/agents")), "no header"),
        (
            server
                .client
                .get(server.url("/agents"))
                .bearer_auth("wrong"),
            "wrong token",
        ),
        (
            server
                .client
                .get(server.url("/agents"))
                .header("authorization", "Basic s3cret-token"),
            "wrong scheme",
        ),
        (server.client.get(server.url("/nowhere")), "unknown route"),
        (
            server.client.post(server.url("/runs")).body("{"),
            "malformed body",
        ),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{label}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "unauthorized", "{label}");
    }
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/agents"))
                .bearer_auth("s3cret-token"),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .send(
            server
                .client
                .post(server.url("/runs"))
                .bearer_auth("s3cret-token")
                .json(&json!({"agent_name": "researcher", "parameters": {"prompt": "hi"}})),
        )
        .await;
    assert_eq!(status, 201);
    server.stop().await;

    let open = served(CoordinatorConfig::default()).await;
    let (status, _) = open.get("/agents").await;
    assert_eq!(status, 200);
    open.stop().await;
}
