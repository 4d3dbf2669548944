//! The web console's login link: `Coordinator::console_login_code` issues a code that
//! `POST /console/login` trades once for the token, behind the same guards as every
//! route; and the OpenAPI document of a server with the console lists its routes and
//! describes the API's bodies by their fields.

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_coordinator::{
    Coordinator, CoordinatorConfig, MAX_LOGIN_FAILURES, RunError, RunExecutor, RunOutcome,
    RunRequest,
};
use serde_json::{Value, json};
use support::{Served, standard_blueprints};

const TOKEN: &str = "console-login-test-token-0123456789";

struct Done;

#[async_trait]
impl RunExecutor for Done {
    async fn execute(&self, _run: RunRequest) -> Result<RunOutcome, RunError> {
        Ok(json!({"output": "done"}).into())
    }
}

async fn console(token: Option<&str>) -> Served {
    let config = CoordinatorConfig {
        console: true,
        auth_token: token.map(str::to_owned),
        ..CoordinatorConfig::default()
    };
    let coordinator = Coordinator::with_executor(config, standard_blueprints(), |_| {
        Arc::new(Done) as Arc<dyn RunExecutor>
    })
    .await
    .unwrap();
    Served::start(coordinator).await
}

fn login(server: &Served, code: &str) -> reqwest::RequestBuilder {
    server
        .client
        .post(server.url("/console/login"))
        .json(&json!({ "code": code }))
}

#[tokio::test]
async fn a_login_code_gives_the_token_once() {
    let server = console(Some(TOKEN)).await;
    let code = server.coordinator.console_login_code().unwrap();
    assert!(code.len() >= 32, "at least 128 bits: {code}");
    let (status, body) = server.send(login(&server, &code)).await;
    assert_eq!((status, body), (200, json!({ "token": TOKEN })));
    // The token it gave works on the API.
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/approvals"))
                .bearer_auth(TOKEN),
        )
        .await;
    assert_eq!(status, 200);
    // A second use, another server's code, nothing: 401 in the API's error body.
    for presented in [code.as_str(), "0123456789abcdef0123456789abcdef", ""] {
        let (status, body) = server.send(login(&server, presented)).await;
        assert_eq!(status, 401, "{presented}: {body}");
        assert_eq!(body["error"], "invalid_login_code");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(!body.to_string().contains(TOKEN));
    }
    // Two codes are independent; each works once.
    let first = server.coordinator.console_login_code().unwrap();
    let second = server.coordinator.console_login_code().unwrap();
    assert_ne!(first, second);
    assert_eq!(server.send(login(&server, &second)).await.0, 200);
    assert_eq!(server.send(login(&server, &first)).await.0, 200);
    server.stop().await;
}

#[tokio::test]
async fn without_a_token_there_is_no_code_and_every_login_is_refused() {
    let server = console(None).await;
    assert_eq!(server.coordinator.console_login_code(), None);
    let (status, body) = server.send(login(&server, "anything")).await;
    assert_eq!(
        (status, body["error"].clone()),
        (401, json!("invalid_login_code"))
    );
    server.stop().await;
}

#[tokio::test]
async fn another_origin_cannot_trade_a_code_and_wrong_codes_lock_the_login() {
    let server = console(Some(TOKEN)).await;
    let code = server.coordinator.console_login_code().unwrap();
    // A page of another origin, a cross-site fetch, a simple text/plain POST: refused
    // before the code is looked at, so the code still works afterwards.
    let (status, body) = server
        .send(login(&server, &code).header("origin", "https://evil.example"))
        .await;
    assert_eq!(
        (status, body["error"].clone()),
        (403, json!("origin_not_allowed"))
    );
    let (status, _) = server
        .send(login(&server, &code).header("sec-fetch-site", "cross-site"))
        .await;
    assert_eq!(status, 403);
    let (status, body) = server
        .send(
            server
                .client
                .post(server.url("/console/login"))
                .header("content-type", "text/plain")
                .body(json!({ "code": code }).to_string()),
        )
        .await;
    assert_eq!(
        (status, body["error"].clone()),
        (415, json!("unsupported_media_type"))
    );
    let (status, body) = server
        .send(login(&server, &code).header("host", "attacker.example"))
        .await;
    assert_eq!(status, 421, "{body}");
    // Wrong codes lock the login, the right one included, with 429.
    for _ in 0..MAX_LOGIN_FAILURES {
        assert_eq!(server.send(login(&server, "guess")).await.0, 401);
    }
    let (status, body) = server.send(login(&server, &code)).await;
    assert_eq!(
        (status, body["error"].clone()),
        (429, json!("login_locked"))
    );
    server.stop().await;
}

/// The `components.schemas` entry `$ref` points at.
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap();
            &document["components"]["schemas"][name]
        }
        None => schema,
    }
}

/// The property names of `schema`, through `$ref`s and `allOf` (flattened fields).
fn fields(document: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(document, schema);
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        names.extend(fields(document, part));
    }
    names
}

fn body_of<'a>(document: &'a Value, path: &str, method: &str, status: Option<&str>) -> &'a Value {
    let operation = &document["paths"][path][method];
    let content = match status {
        Some(status) => &operation["responses"][status]["content"]["application/json"],
        None => &operation["requestBody"]["content"]["application/json"],
    };
    &content["schema"]
}

fn assert_names(document: &Value, schema: &Value, expected: &[&str], what: &str) {
    let found = fields(document, schema);
    for name in expected {
        assert!(
            found.iter().any(|f| f == name),
            "{what} lacks `{name}`: {found:?}"
        );
    }
}

#[tokio::test]
async fn the_document_lists_the_console_routes_and_names_the_bodies_fields() {
    let server = console(Some(TOKEN)).await;
    let (status, document) = server
        .send(
            server
                .client
                .get(server.url("/openapi.json"))
                .bearer_auth(TOKEN),
        )
        .await;
    assert_eq!(status, 200);
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "delete", "put", "patch"].contains(&method.as_str()) {
                operations.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    operations.sort();
    assert_eq!(
        operations,
        [
            "DELETE /runs/{id}",
            "GET /",
            "GET /agents",
            "GET /approvals",
            "GET /console/app.css",
            "GET /console/app.js",
            "GET /openapi.json",
            "GET /runs",
            "GET /runs/{id}",
            "GET /runs/{id}/changes",
            "GET /runs/{id}/events",
            "POST /console/login",
            "POST /runs",
            "POST /runs/{id}/approvals/{approval_id}",
            "POST /runs/{id}/revert",
        ]
    );
    let d = &document;
    let run = [
        "run_id",
        "agent_name",
        "status",
        "parameters",
        "created_at",
        "usage",
    ];
    let run_plus = [&run[..], &["root_run_id", "depth", "pending_approvals"]].concat();
    assert_names(
        d,
        body_of(d, "/runs/{id}", "get", Some("200")),
        &run_plus,
        "Run",
    );
    assert_names(
        d,
        body_of(d, "/runs/{id}", "delete", Some("200")),
        &run,
        "Run",
    );
    assert_names(
        d,
        body_of(d, "/runs", "post", None),
        &["agent_name", "parameters"],
        "CreateRunBody",
    );
    assert_names(
        d,
        body_of(d, "/runs", "post", Some("201")),
        &["run_id", "status"],
        "RunCreated",
    );
    assert_names(
        d,
        body_of(d, "/runs", "post", Some("400")),
        &["error", "message"],
        "ErrorBody",
    );
    assert_names(
        d,
        body_of(d, "/runs", "get", Some("200")),
        &["runs", "next_cursor"],
        "RunPage",
    );
    assert_names(
        d,
        body_of(d, "/agents", "get", Some("200")),
        &["agents"],
        "AgentListing",
    );
    assert_names(
        d,
        body_of(d, "/approvals", "get", Some("200")),
        &["approvals"],
        "ApprovalList",
    );
    assert_names(
        d,
        body_of(d, "/runs/{id}/approvals/{approval_id}", "post", None),
        &["decision", "reason"],
        "ApprovalDecision",
    );
    assert_names(
        d,
        body_of(d, "/console/login", "post", None),
        &["code"],
        "LoginBody",
    );
    assert_names(
        d,
        body_of(d, "/console/login", "post", Some("200")),
        &["token"],
        "LoginToken",
    );
    assert_names(
        d,
        body_of(d, "/runs/{id}/changes", "get", Some("200")),
        &["run_id", "session_id", "turns"],
        "RunChanges",
    );
    assert_names(
        d,
        body_of(d, "/runs/{id}/revert", "post", None),
        &["to_turn", "force"],
        "RevertRequest",
    );
    assert_names(
        d,
        body_of(d, "/runs/{id}/revert", "post", Some("200")),
        &[
            "run_id",
            "turns",
            "restored",
            "not_captured",
            "irreversible",
            "forced",
        ],
        "RunReverted",
    );
    let schemas = &document["components"]["schemas"];
    assert_names(
        d,
        &schemas["TurnChanges"],
        &["turn", "undone", "paths", "not_captured", "irreversible"],
        "TurnChanges",
    );
    assert_names(
        d,
        &schemas["PathChange"],
        &[
            "path",
            "kind",
            "before",
            "after",
            "lines_added",
            "lines_removed",
            "diff",
        ],
        "PathChange",
    );
    assert_names(
        d,
        &schemas["PendingApproval"],
        &[
            "approval_id",
            "call_id",
            "tool",
            "arguments",
            "tier",
            "scope",
            "requested_at",
            "expires_at",
        ],
        "PendingApproval",
    );
    assert_names(
        d,
        &schemas["ApprovalView"],
        &["run_id", "agent_name", "approval_id", "tool", "preview"],
        "ApprovalView",
    );
    // No JSON body of the API is left undescribed (the document itself is free-form).
    for (path, item) in document["paths"].as_object().unwrap() {
        if path == "/openapi.json" {
            continue;
        }
        assert!(
            !item.to_string().contains("\"schema\":{}"),
            "{path} has a body without a schema: {item}"
        );
    }
    server.stop().await;
}
