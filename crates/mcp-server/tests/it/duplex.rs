//! A coordinator served on an in-memory duplex stream to rmcp's own client.

use std::sync::Arc;

use oxydra_coordinator::{BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps};
use oxydra_mcp_server::{BuiltinTools, McpServer};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::{BuiltinToolsConfig, ToolRegistry};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};

async fn coordinator(turns: Vec<ScriptedTurn>) -> Coordinator {
    let provider = Arc::new(ScriptedProvider::new(turns));
    let deps = RunnerDeps::new(ToolRegistry::new(), ".").with_provider(provider, "test-model");
    let blueprints = vec![BlueprintConfig::agent(
        "researcher",
        "Research assistant",
        "You research.",
    )];
    Coordinator::new(CoordinatorConfig::default(), blueprints, deps)
        .await
        .unwrap()
}

/// `server` on one end of a duplex stream, rmcp's client on the other; the server's
/// task ends when the client goes.
async fn connect(
    server: McpServer,
) -> (
    RunningService<RoleClient, ()>,
    tokio::task::JoinHandle<Result<(), oxydra_mcp_server::McpServerError>>,
) {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let served = tokio::spawn(server.serve_io(read, write, std::future::pending()));
    let (read, write) = tokio::io::split(client_end);
    let client = ().serve(AsyncRwTransport::new_client(read, write)).await.unwrap();
    (client, served)
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let Value::Object(arguments) = args else {
        panic!("arguments must be an object");
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_library_user_serves_a_coordinator_to_an_mcp_client_on_a_stream() {
    let coordinator = coordinator(vec![ScriptedTurn::text("The answer is 42.")]).await;
    let server = McpServer::builder(&coordinator).build().unwrap();
    let (client, served) = connect(server).await;

    let info = client.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .is_some_and(|text| text.contains("start_agent_run")),
        "{info:?}"
    );
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "list_agent_blueprints",
            "start_agent_run",
            "get_agent_run",
            "cancel_agent_run"
        ],
        "no approval tools unless runs may wait"
    );
    assert!(tools.iter().all(|tool| tool.annotations.is_some()));

    // A refused run is a tool error carrying the API's body, schema included.
    let refused = call(
        &client,
        "start_agent_run",
        json!({"agent_name": "researcher", "parameters": {"wrong": 1}}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    let body = refused.structured_content.clone().unwrap();
    assert_eq!(body["error"], "parameter_validation_failed", "{body}");
    assert!(body["parameters_schema"].is_object(), "{body}");

    // Arguments that do not match a tool's input schema never reach it.
    let invalid = call(&client, "get_agent_run", json!({"run_id": 7})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        text(&invalid).contains("invalid_arguments"),
        "{}",
        text(&invalid)
    );

    let started = call(
        &client,
        "start_agent_run",
        json!({"agent_name": "researcher", "parameters": {"prompt": "What is the answer?"}}),
    )
    .await;
    assert_eq!(started.is_error, Some(false), "{}", text(&started));
    let run_id = started.structured_content.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = call(
        &client,
        "get_agent_run",
        json!({"run_id": run_id, "wait_secs": 30}),
    )
    .await;
    let run = run.structured_content.unwrap();
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["result"]["text"], "The answer is 42.");

    // An ended run cannot be cancelled: the API's `not_cancellable` body.
    let cancelled = call(&client, "cancel_agent_run", json!({"run_id": run_id})).await;
    assert_eq!(cancelled.is_error, Some(true));
    assert!(
        text(&cancelled).contains("not_cancellable"),
        "{}",
        text(&cancelled)
    );

    client.cancel().await.unwrap();
    served.await.unwrap().unwrap();
    coordinator.shutdown().await;
}

#[tokio::test]
async fn approvals_and_builtin_tools_are_served_when_asked_for() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("notes.txt"),
        "the launch is on tuesday",
    )
    .unwrap();
    let coordinator = coordinator(vec![]).await;
    let config = BuiltinToolsConfig::default();
    let registry =
        ToolRegistry::with_builtin_subset(&config, &["file_read", "shell_exec"]).unwrap();
    let server = McpServer::builder(&coordinator)
        .workspace(workspace.path())
        .approvals(true)
        .model_approvals(true)
        .builtin_tools(BuiltinTools::new(registry, workspace.path()))
        .build()
        .unwrap();
    let (client, served) = connect(server).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for name in [
        "list_pending_approvals",
        "decide_approval",
        "file_read",
        "shell_exec",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }

    let unknown = call(
        &client,
        "list_pending_approvals",
        json!({"run_id": "run_nope"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text(&unknown).contains("run_not_found"),
        "{}",
        text(&unknown)
    );

    let read = call(&client, "file_read", json!({"path": "notes.txt"})).await;
    assert_eq!(read.is_error, Some(false), "{}", text(&read));
    assert!(text(&read).contains("tuesday"));
    // Consent: no one can give it over MCP, so a command is denied by default.
    let ran = call(&client, "shell_exec", json!({"command": "touch ran.txt"})).await;
    assert_eq!(ran.is_error, Some(true));
    assert!(
        text(&ran).contains("no one can give it over MCP"),
        "{}",
        text(&ran)
    );
    assert!(!workspace.path().join("ran.txt").exists());

    client.cancel().await.unwrap();
    served.await.unwrap().unwrap();
    coordinator.shutdown().await;
}

#[tokio::test]
async fn a_model_does_not_decide_approvals_unless_the_server_allows_it() {
    let coordinator = coordinator(vec![]).await;
    let server = McpServer::builder(&coordinator)
        .approvals(true)
        .build()
        .unwrap();
    let (client, served) = connect(server).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(names.contains(&"list_pending_approvals"), "{names:?}");
    assert!(!names.contains(&"decide_approval"), "{names:?}");
    // Called anyway (a model that read about it elsewhere): refused, nothing decided.
    let refused = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("decide_approval").with_arguments(
                json!({"run_id": "run_x", "approval_id": "apr_x", "decision": "approve_once"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    match refused {
        Err(_) => {}
        Ok(result) => assert_eq!(result.is_error, Some(true), "{result:?}"),
    }
    let info = client.peer_info().unwrap();
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        !instructions.contains("decide_approval answers"),
        "{instructions}"
    );
    assert!(instructions.contains("oxydra approvals"), "{instructions}");
    client.cancel().await.unwrap();
    served.await.unwrap().unwrap();
    coordinator.shutdown().await;
}
