//! A coordinator served over MCP's streamable HTTP, behind the guards of `oxydra serve`.

use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps};
use oxydra_mcp_server::{MCP_PATH, McpServer};
use oxydra_tools::ToolRegistry;
use serde_json::{Value, json};

const TOKEN: &str = "library-mcp-token";

#[tokio::test]
async fn streamable_http_needs_the_token_and_refuses_foreign_origins() {
    let config = CoordinatorConfig {
        auth_token: Some(TOKEN.to_owned()),
        ..CoordinatorConfig::default()
    };
    let blueprints = vec![BlueprintConfig::agent(
        "researcher",
        "Researcher",
        "You research.",
    )];
    let deps = RunnerDeps::new(ToolRegistry::new(), ".");
    let coordinator = Coordinator::new(config, blueprints, deps).await.unwrap();
    let server = McpServer::builder(&coordinator).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{MCP_PATH}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve_http(listener, async {
        let _ = stopped.await;
    }));

    let client = oxydra_http::client();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "library-test", "version": "0"}
        }
    });
    let post = |headers: &[(&str, String)]| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send()
    };
    let bearer = ("authorization", format!("Bearer {TOKEN}"));

    let anonymous = post(&[]).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let foreign = post(&[
        bearer.clone(),
        ("origin", "https://evil.example".to_owned()),
    ])
    .await
    .unwrap();
    assert_eq!(foreign.status(), 403);
    let answered = post(&[bearer]).await.unwrap();
    assert_eq!(answered.status(), 200);
    let body: Value = answered.json().await.unwrap();
    assert_eq!(body["result"]["serverInfo"]["name"], "oxydra", "{body}");
    assert_eq!(body["result"]["capabilities"]["tools"], json!({}), "{body}");

    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
    coordinator.shutdown().await;
}
