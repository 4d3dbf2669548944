//! What a person needs from the API, over real HTTP: `GET /runs` (filters, pages),
//! `GET /approvals` (across runs, oldest first, with what each will do),
//! `GET /runs/{id}/events` (Server-Sent Events: history, live, `Last-Event-ID`),
//! `GET /openapi.json`; bad filters, missing tokens and other origins refused.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use oxydra_coordinator::{BlueprintConfig, CoordinatorConfig, RunnerDeps};
use oxydra_executor::DeferAll;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{SafetyTier, ToolSchema};
use serde_json::{Value, json};
use support::{Served, registry};

/// A privileged stand-in for a built-in tool (`shell_exec`, `file_edit`, …): the
/// coordinator shows what it will do by its name and arguments.
struct Named(&'static str);

#[async_trait]
impl Tool for Named {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(self.0, "Stands in", json!({"type": "object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("{} done", self.0)))
    }
}

const TOOLS: [&str; 3] = ["shell_exec", "file_edit", "web_fetch"];

fn blueprint(name: &str) -> BlueprintConfig {
    let mut agent = BlueprintConfig::agent(name, "Does things", "You do things.");
    agent.tools = Some(TOOLS.iter().map(|tool| (*tool).to_owned()).collect());
    agent.allow_privileged = agent.tools.clone().unwrap_or_default();
    agent
}

/// A coordinator over `workspace` whose agents (`builder`, `fetcher`) follow `turns`,
/// every privileged call waiting for a person.
pub(crate) async fn served(
    config: CoordinatorConfig,
    turns: Vec<ScriptedTurn>,
    workspace: &std::path::Path,
) -> Served {
    let provider = Arc::new(ScriptedProvider::new(turns));
    let tools: Vec<Arc<dyn Tool>> = TOOLS
        .iter()
        .map(|name| Arc::new(Named(name)) as Arc<dyn Tool>)
        .collect();
    let mut deps =
        RunnerDeps::new(registry(tools), workspace).with_provider(provider, "test-model");
    deps.permission_broker = Some(Arc::new(DeferAll::new(Duration::from_secs(3600))));
    deps.memory = Some(Arc::new(SqliteMemory::open_in_memory().unwrap()) as Arc<dyn Memory>);
    Served::with(
        config,
        vec![blueprint("builder"), blueprint("fetcher")],
        deps,
    )
    .await
}

pub(crate) async fn start(server: &Served, agent: &str) -> String {
    let (status, created) = server
        .post_run(json!({"agent_name": agent, "parameters": {"prompt": "Go."}}))
        .await;
    assert_eq!(status, 201, "{created}");
    created["run_id"].as_str().unwrap().to_owned()
}

/// Polls `GET /runs/{id}` (up to 5 s) until the run has `status`.
pub(crate) async fn until(server: &Served, run_id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let (_, run) = server.get(&format!("/runs/{run_id}")).await;
        if run["status"] == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never became {status}");
}

fn ids(page: &Value) -> Vec<String> {
    page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["run_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn runs_are_listed_newest_first_filtered_and_paged() {
    let dir = tempfile::tempdir().unwrap();
    // The first run waits on its shell command; the others end at once.
    let turns = vec![
        ScriptedTurn::tool_call("c1", "shell_exec", r#"{"command":"make"}"#),
        ScriptedTurn::text("one"),
        ScriptedTurn::text("two"),
    ];
    let server = served(CoordinatorConfig::default(), turns, dir.path()).await;
    let waiting = start(&server, "builder").await;
    until(&server, &waiting, "waiting_approval").await;
    let second = start(&server, "fetcher").await;
    server.finished(&second).await;
    let third = start(&server, "builder").await;
    server.finished(&third).await;

    let (status, all) = server.get("/runs").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        ids(&all),
        [third.as_str(), second.as_str(), waiting.as_str()]
    );
    assert!(all.get("next_cursor").is_none(), "{all}");
    let (_, page) = server.get("/runs?status=waiting_approval").await;
    assert_eq!(ids(&page), [waiting.as_str()]);
    let (_, page) = server.get("/runs?agent=builder").await;
    assert_eq!(ids(&page), [third.as_str(), waiting.as_str()]);
    let (_, page) = server.get("/runs?since=1h&status=completed").await;
    assert_eq!(ids(&page), [third.as_str(), second.as_str()]);

    let (_, first_page) = server.get("/runs?limit=2").await;
    assert_eq!(ids(&first_page), [third.as_str(), second.as_str()]);
    let cursor = first_page["next_cursor"].as_str().unwrap();
    let (_, next) = server.get(&format!("/runs?limit=2&cursor={cursor}")).await;
    assert_eq!(ids(&next), [waiting.as_str()]);
    assert!(next.get("next_cursor").is_none(), "{next}");
}

#[tokio::test]
async fn a_bad_filter_is_400_with_an_error_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(CoordinatorConfig::default(), vec![], dir.path()).await;
    for (query, field) in [
        ("status=finished", "status"),
        ("since=last-week", "since"),
        ("limit=100000", "limit"),
        ("limit=-1", "limit"),
        ("cursor=%27%20OR%201%3D1--", "cursor"),
        ("agent=", "agent"),
        ("sort=asc", "sort"),
    ] {
        let (status, body) = server.get(&format!("/runs?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"], "invalid_query", "{query}: {body}");
        assert_eq!(body["field"], field, "{query}: {body}");
        assert!(body["message"].as_str().unwrap().contains(field), "{body}");
    }
}

#[tokio::test]
async fn approvals_across_runs_are_listed_oldest_first_with_what_will_happen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), "fn main() {\n    old();\n}\n").unwrap();
    let turns = vec![
        ScriptedTurn::tool_call("c1", "shell_exec", r#"{"command":"cargo build --release"}"#),
        ScriptedTurn::tool_call(
            "c2",
            "file_edit",
            r#"{"path":"main.rs","old":"old();","new":"new();"}"#,
        ),
        ScriptedTurn::tool_call("c3", "web_fetch", r#"{"url":"https://example.com/x"}"#),
    ];
    let server = served(CoordinatorConfig::default(), turns, dir.path()).await;
    let mut runs = Vec::new();
    for agent in ["builder", "builder", "fetcher"] {
        let run_id = start(&server, agent).await;
        until(&server, &run_id, "waiting_approval").await;
        runs.push(run_id);
    }
    let (status, body) = server.get("/approvals").await;
    assert_eq!(status, 200, "{body}");
    let approvals = body["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 3, "{body}");
    let order: Vec<&str> = approvals
        .iter()
        .map(|approval| approval["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [&runs[0], &runs[1], &runs[2]]);
    assert_eq!(approvals[0]["agent_name"], "builder");
    assert_eq!(approvals[0]["tool"], "shell_exec");
    assert_eq!(
        approvals[0]["preview"],
        json!({"kind": "command", "command": "cargo build --release"})
    );
    assert_eq!(approvals[1]["preview"]["kind"], "diff", "{body}");
    let diff = approvals[1]["preview"]["diff"].as_str().unwrap();
    assert!(diff.contains("-    old();\n+    new();\n"), "{diff}");
    assert_eq!(
        approvals[2]["preview"],
        json!({"kind": "url", "url": "https://example.com/x"})
    );
    // The ids are unique across runs: each decides one request.
    let mut approval_ids: Vec<&str> = approvals
        .iter()
        .map(|approval| approval["approval_id"].as_str().unwrap())
        .collect();
    approval_ids.dedup();
    assert_eq!(approval_ids.len(), 3);
}

/// One Server-Sent Event.
#[derive(Debug, Clone)]
struct Sse {
    event: String,
    id: String,
    data: Value,
}

/// Reads events from `GET /runs/{id}/events` (after `last`) until the stream ends or
/// `stop` says so; at most 10 s.
async fn events(
    server: &Served,
    run_id: &str,
    last: Option<&str>,
    mut stop: impl FnMut(&Sse) -> bool,
) -> Vec<Sse> {
    let mut request = server
        .client
        .get(server.url(&format!("/runs/{run_id}/events")));
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let read = async {
        while let Some(chunk) = stream.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let mut event = Sse {
                    event: String::new(),
                    id: String::new(),
                    data: Value::Null,
                };
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event: ") {
                        event.event = value.into();
                    } else if let Some(value) = line.strip_prefix("id: ") {
                        event.id = value.into();
                    } else if let Some(value) = line.strip_prefix("data: ") {
                        event.data = serde_json::from_str(value).unwrap();
                    }
                }
                if event.event.is_empty() {
                    continue; // a keep-alive comment
                }
                let done = stop(&event);
                seen.push(event);
                if done {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the event stream neither ended nor said what was awaited");
    seen
}

#[tokio::test]
async fn a_runs_events_are_its_history_then_live_until_it_ends_and_resume_after_last_event_id() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
    let turns = vec![
        ScriptedTurn::tool_call("c1", "shell_exec", r#"{"command":"make"}"#),
        ScriptedTurn::text(format!("Built. The key was {secret}.")),
    ];
    let server = served(CoordinatorConfig::default(), turns, dir.path()).await;
    let run_id = start(&server, "builder").await;
    until(&server, &run_id, "waiting_approval").await;

    // History: the run as it is, its messages so far; the stream stays open.
    let history = events(&server, &run_id, None, |event| {
        event.event == "run" && event.data["status"] == "waiting_approval"
    })
    .await;
    let kinds: Vec<&str> = history.iter().map(|event| event.event.as_str()).collect();
    assert!(kinds.contains(&"message"), "{history:?}");
    let waiting = history.last().unwrap();
    assert_eq!(
        waiting.data["pending_approvals"][0]["tool"], "shell_exec",
        "{waiting:?}"
    );
    let approval_id = waiting.data["pending_approvals"][0]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Live: a person approves while a client listens; the stream ends with the run.
    let listening = {
        let client = server.client.clone();
        let url = server.url(&format!("/runs/{run_id}/approvals/{approval_id}"));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let response = client
                .post(url)
                .json(&json!({"decision": "approve_once"}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        })
    };
    let live = events(&server, &run_id, Some(&waiting.id), |_| false).await;
    listening.await.unwrap();
    let end = live.last().unwrap();
    assert_eq!(end.event, "end", "{live:?}");
    assert_eq!(end.data["status"], "completed");
    // Resumed after the waiting event: only what came later, each message once.
    let last_sequence: u64 = waiting.id.split('.').next().unwrap().parse().unwrap();
    let messages: Vec<u64> = live
        .iter()
        .filter(|event| event.event == "message")
        .map(|event| event.data["sequence"].as_u64().unwrap())
        .collect();
    assert!(!messages.is_empty(), "{live:?}");
    assert!(
        messages.iter().all(|sequence| *sequence > last_sequence),
        "{live:?}"
    );
    let shown = serde_json::to_string(&live.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap();
    assert!(shown.contains("tool"), "{shown}");
    assert!(
        !shown.contains("4f9a8b7c6d5e"),
        "the stream is scrubbed: {shown}"
    );

    // An ended run's stream is its history and its end, then it closes.
    let again = events(&server, &run_id, None, |_| false).await;
    assert_eq!(again.last().unwrap().event, "end");

    let (status, body) = server
        .send(
            server
                .client
                .get(server.url(&format!("/runs/{run_id}/events")))
                .header("Last-Event-ID", "not-an-id"),
        )
        .await;
    assert_eq!(
        (status, body["field"].clone()),
        (400, json!("Last-Event-ID"))
    );
    let (status, body) = server.get("/runs/run_nope/events").await;
    assert_eq!(
        (status, body["error"].clone()),
        (404, json!("run_not_found"))
    );
}

#[tokio::test]
async fn the_openapi_document_lists_every_route_and_each_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(CoordinatorConfig::default(), vec![], dir.path()).await;
    let (status, document) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    let paths = document["paths"].as_object().unwrap();
    let mut operations = Vec::new();
    for (path, item) in paths {
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
            "GET /agents",
            "GET /approvals",
            "GET /openapi.json",
            "GET /runs",
            "GET /runs/{id}",
            "GET /runs/{id}/changes",
            "GET /runs/{id}/events",
            "POST /runs",
            "POST /runs/{id}/approvals/{approval_id}",
            "POST /runs/{id}/revert",
        ]
    );
    // Every documented operation is routed: none answers the fallbacks' 404 / 405.
    for operation in &operations {
        let (method, path) = operation.split_once(' ').unwrap();
        let path = path
            .replace("{id}", "run_x")
            .replace("{approval_id}", "apr_x");
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = server
            .client
            .request(method, server.url(&path))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(
            status != 405 && body["error"] != "not_found",
            "{operation}: {status} {body}"
        );
    }
}

#[tokio::test]
async fn the_new_routes_refuse_a_request_without_the_token_and_a_write_from_another_origin() {
    let dir = tempfile::tempdir().unwrap();
    let config = CoordinatorConfig {
        auth_token: Some("s3cret-token-for-tests".into()),
        ..CoordinatorConfig::default()
    };
    let server = served(config, vec![], dir.path()).await;
    for path in ["/runs", "/approvals", "/openapi.json", "/runs/run_x/events"] {
        let (status, body) = server.get(path).await;
        assert_eq!(
            (status, body["error"].clone()),
            (401, json!("unauthorized")),
            "{path}"
        );
    }
    let bearer = "Bearer s3cret-token-for-tests";
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/approvals"))
                .header("authorization", bearer),
        )
        .await;
    assert_eq!(status, 200);
    // A page of another origin holding the token still cannot decide, nor read.
    let (status, body) = server
        .send(
            server
                .client
                .post(server.url("/runs/run_x/approvals/apr_x"))
                .header("authorization", bearer)
                .header("origin", "https://evil.example")
                .json(&json!({"decision": "approve_once"})),
        )
        .await;
    assert_eq!(
        (status, body["error"].clone()),
        (403, json!("origin_not_allowed"))
    );
    let (status, _) = server
        .send(
            server
                .client
                .get(server.url("/approvals"))
                .header("authorization", bearer)
                .header("sec-fetch-site", "cross-site"),
        )
        .await;
    assert_eq!(status, 403);
}
