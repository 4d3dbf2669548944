//! `[[mcp_servers]]` `headers` and `bearer_token_env` against a streamable-HTTP server
//! that requires them and, like a careless server or proxy, echoes what it was sent in
//! its errors and its answers: the credentials reach the server and nothing else.
//!
//! The token comes from `CARGO_MANIFEST_DIR`, a variable cargo sets for every test
//! process (tests may not change their own environment: `unsafe_code` is forbidden).

use crate::common;

use oxydra_mcp::{McpManager, McpServerConfig, ServerState};
use oxydra_test_support::{MockServer, Reply};
use oxydra_tools::ToolRegistry;
use serde_json::json;

const TOKEN_VAR: &str = "CARGO_MANIFEST_DIR";
const TENANT: &str = "tenant-7f3a9c";

fn token() -> String {
    std::env::var(TOKEN_VAR).expect("cargo sets CARGO_MANIFEST_DIR for tests")
}

/// A minimal MCP server over streamable HTTP (JSON answers, no sessions) that wants
/// `Authorization: Bearer <token>` and `X-Tenant`, and quotes both back.
fn server() -> MockServer {
    let token = token();
    MockServer::builder()
        .respond_with(move |request| {
            let header = |name: &str| {
                request
                    .headers
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let (auth, tenant) = (header("authorization"), header("x-tenant"));
            if auth != format!("Bearer {token}") || tenant != TENANT {
                let echo = json!({"error": format!("refused `{auth}` for `{tenant}`")});
                return Reply::json(401, echo.to_string());
            }
            if request.method != "POST" {
                return Reply::new(405);
            }
            let id = request.body["id"].clone();
            let result = match request.body["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "echo", "version": "1"}
                }),
                Some("tools/list") => json!({"tools": [{
                    "name": "whoami",
                    "description": "Says what credentials came",
                    "inputSchema": {"type": "object"}
                }]}),
                Some("tools/call") => json!({
                    "content": [{"type": "text", "text": format!("you sent {auth} as {tenant}")}]
                }),
                _ => return Reply::new(202),
            };
            Reply::json(
                200,
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )
        })
        .start()
        .unwrap()
}

fn config(server: &MockServer, tenant: &str, token_var: &str) -> McpServerConfig {
    let mut config = McpServerConfig::http("echo", server.url("/mcp"));
    config
        .headers
        .0
        .insert("X-Tenant".to_owned(), tenant.to_owned());
    config.bearer_token_env = Some(token_var.to_owned());
    config.restart_attempts = 1;
    config.init_timeout_secs = 10;
    config
}

#[tokio::test]
async fn the_token_and_headers_reach_the_server_and_nothing_else() {
    let server = server();
    let config = config(&server, TENANT, TOKEN_VAR);
    let shown = format!("{config:?}");
    assert!(!shown.contains(TENANT), "{shown}");
    assert!(shown.contains(TOKEN_VAR), "{shown}");

    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status}");
    let sent = server.requests();
    assert!(!sent.is_empty());
    for request in &sent {
        assert_eq!(
            request.headers["authorization"].to_str().unwrap(),
            format!("Bearer {}", token())
        );
        assert_eq!(request.headers["x-tenant"], TENANT);
    }

    let mut registry = ToolRegistry::new();
    manager.register_tools(&mut registry).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = registry
        .get("echo__whoami")
        .unwrap()
        .execute(json!({}), &common::ctx(dir.path()))
        .await
        .unwrap();
    assert_eq!(
        output.content, "you sent Bearer [redacted] as [redacted]",
        "an echoed credential is redacted from the answer"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_refusal_that_echoes_the_credentials_shows_none_of_them() {
    let server = server();
    // The right token with the wrong tenant: the server refuses, quoting both.
    let config = config(&server, "tenant-wrong-1234", TOKEN_VAR);
    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = &manager.status()[0];
    assert!(
        matches!(status.state, ServerState::Failed { .. }),
        "{status}"
    );
    let shown = format!(
        "{status} {}",
        serde_json::to_string(&manager.status()).unwrap()
    );
    assert!(!shown.contains(&token()), "{shown}");
    assert!(!shown.contains("tenant-wrong-1234"), "{shown}");
    assert!(server.hits() >= 1, "the server was asked");
    manager.shutdown().await;
}

#[tokio::test]
async fn an_unset_token_variable_fails_the_server_naming_it_before_any_request() {
    let server = server();
    let config = config(&server, TENANT, "OXYDRA_TEST_NO_SUCH_TOKEN_VAR");
    let manager = McpManager::start(vec![config]).await.unwrap();
    let status = manager.status()[0].to_string();
    assert!(
        status.contains("OXYDRA_TEST_NO_SUCH_TOKEN_VAR") && status.contains("not set"),
        "{status}"
    );
    assert_eq!(server.hits(), 0, "nothing was sent without the token");
    manager.shutdown().await;
}
