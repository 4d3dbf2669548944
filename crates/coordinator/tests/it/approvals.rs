//! Approvals that wait, over HTTP on SQLite: an agent's privileged call stops the run
//! (`waiting_approval`, its request listed, its worker free), a person decides with
//! `POST /runs/{id}/approvals/{approval_id}`, and the run resumes from its stored
//! session — approved calls run, denials and lapsed requests reach the model as tool
//! errors — and every bad request gets its JSON 4xx.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_coordinator::{BlueprintConfig, CoordinatorConfig, EXPIRED_REASON, RunnerDeps};
use oxydra_executor::DeferAll;
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{CallId, MessageRole, SafetyTier, ToolCall, ToolSchema};
use serde_json::{Value, json};
use support::{Served, registry};

/// A privileged tool that records the arguments of every call it runs.
#[derive(Default)]
struct Delete {
    ran: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl Tool for Delete {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "delete_path",
            "Deletes a path",
            json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::Privileged
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.ran.lock().unwrap().push(args);
        Ok(ToolOutput::text("deleted"))
    }
}

/// `cleaner`, an agent that may call `delete_path`; `chatter`, one without tools.
fn blueprints() -> Vec<BlueprintConfig> {
    let mut cleaner = BlueprintConfig::agent("cleaner", "Cleans up", "You clean up.");
    cleaner.tools = Some(vec!["delete_path".into()]);
    cleaner.allow_privileged = vec!["delete_path".into()];
    let mut chatter = BlueprintConfig::agent("chatter", "Chats", "You chat.");
    chatter.tools = Some(Vec::new());
    vec![cleaner, chatter]
}

/// A turn asking to delete `path`, then the model's answer.
fn script(answer: &str) -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::tool_call("call_del", "delete_path", r#"{"path":"build/\u202eout"}"#),
        ScriptedTurn::text(answer),
    ]
}

struct Setup {
    server: Served,
    provider: Arc<ScriptedProvider>,
    ran: Arc<Mutex<Vec<Value>>>,
}

/// A coordinator whose agents' requests wait `ttl` for a decision, their sessions
/// stored in `memory` (in memory when `None`).
async fn setup_with(
    config: CoordinatorConfig,
    turns: Vec<ScriptedTurn>,
    ttl: Duration,
    memory: Option<Arc<dyn Memory>>,
) -> Setup {
    let provider = Arc::new(ScriptedProvider::new(turns));
    let delete = Delete::default();
    let ran = Arc::clone(&delete.ran);
    let mut deps = RunnerDeps::new(registry(vec![Arc::new(delete) as Arc<dyn Tool>]), ".")
        .with_provider(provider.clone(), "test-model");
    deps.permission_broker = Some(Arc::new(DeferAll::new(ttl)));
    deps.memory =
        Some(memory.unwrap_or_else(|| {
            Arc::new(SqliteMemory::open_in_memory().unwrap()) as Arc<dyn Memory>
        }));
    let server = Served::with(config, blueprints(), deps).await;
    Setup {
        server,
        provider,
        ran,
    }
}

async fn setup(turns: Vec<ScriptedTurn>) -> Setup {
    setup_with(
        CoordinatorConfig::default(),
        turns,
        Duration::from_secs(3600),
        None,
    )
    .await
}

/// Starts a run of `agent`; its id.
async fn start(server: &Served, agent: &str) -> String {
    let (status, created) = server
        .post_run(json!({"agent_name": agent, "parameters": {"prompt": "Clean the build."}}))
        .await;
    assert_eq!(status, 201, "{created}");
    created["run_id"].as_str().unwrap().to_owned()
}

/// Starts a `cleaner` run and waits until it asks for approval: the run's id and the
/// request's.
async fn start_waiting(server: &Served) -> (String, String) {
    let run_id = start(server, "cleaner").await;
    let waiting = until(server, &run_id, "waiting_approval").await;
    let approval_id = waiting["pending_approvals"][0]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    (run_id, approval_id)
}

/// Polls `GET /runs/{id}` (up to 2 s) until the run has `status`.
async fn until(server: &Served, run_id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (code, run) = server.get(&format!("/runs/{run_id}")).await;
        assert_eq!(code, 200, "{run}");
        if run["status"] == status {
            return run;
        }
        last = run;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never became {status}: {last}");
}

async fn decide(server: &Served, run_id: &str, approval_id: &str, body: Value) -> (u16, Value) {
    server
        .send(
            server
                .client
                .post(server.url(&format!("/runs/{run_id}/approvals/{approval_id}")))
                .json(&body),
        )
        .await
}

/// The text of the tool result the model was sent in its `n`th request.
fn tool_result(provider: &ScriptedProvider, n: usize) -> String {
    let requests = provider.requests();
    requests[n]
        .messages
        .iter()
        .find(|message| message.role == MessageRole::Tool)
        .map(|message| message.text().to_owned())
        .unwrap_or_else(|| panic!("no tool result in request {n}"))
}

#[tokio::test]
async fn an_approved_call_runs_when_the_run_resumes_and_the_run_completes() {
    let config = CoordinatorConfig {
        max_concurrent_runs: 1,
        ..CoordinatorConfig::default()
    };
    let mut turns = script("Cleaned up.");
    turns.insert(1, ScriptedTurn::text("Hello."));
    let Setup {
        server,
        provider,
        ran,
    } = setup_with(config, turns, Duration::from_secs(3600), None).await;
    let run_id = start(&server, "cleaner").await;
    let waiting = until(&server, &run_id, "waiting_approval").await;
    let pending = waiting["pending_approvals"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{waiting}");
    let request = &pending[0];
    assert_eq!(request["tool"], "delete_path");
    assert_eq!(request["call_id"], "call_del");
    assert_eq!(request["tier"], "privileged");
    assert!(request["scope"].is_string(), "{request}");
    // The arguments as a person sees them: pretty JSON, nothing that restyles a terminal.
    let shown = request["arguments"].as_str().unwrap();
    assert!(shown.contains("\\u202e") && shown.is_ascii(), "{shown}");
    let asked = request["requested_at"].as_i64().unwrap();
    assert_eq!(request["expires_at"].as_i64().unwrap() - asked, 3_600_000);
    assert!(
        ran.lock().unwrap().is_empty(),
        "nothing runs before a decision"
    );

    // The only worker is free: another run completes while the first waits.
    let other = start(&server, "chatter").await;
    let chat = server.finished(&other).await;
    assert_eq!(chat["status"], "completed", "{chat}");
    assert_eq!(chat["result"]["text"], "Hello.");

    let approval_id = request["approval_id"].as_str().unwrap();
    let (status, run) = decide(
        &server,
        &run_id,
        approval_id,
        json!({"decision": "approve_once"}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run_id"], run_id.as_str());
    assert!(run.get("pending_approvals").is_none(), "{run}");
    let done = until(&server, &run_id, "completed").await;
    assert_eq!(done["result"]["text"], "Cleaned up.");
    // Turns count over both executions.
    assert_eq!(done["result"]["turns"], 2, "{done}");
    assert_eq!(done["usage"]["turns"], 2, "{done}");
    assert!(done.get("pending_approvals").is_none(), "{done}");
    assert_eq!(
        *ran.lock().unwrap(),
        vec![json!({"path": "build/\u{202e}out"})]
    );
    assert_eq!(tool_result(&provider, 2), "deleted");
    assert_eq!(provider.requests().len(), 3);

    // Decided already: a second decision is refused, as JSON.
    let (status, body) = decide(&server, &run_id, approval_id, json!({"decision": "deny"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "approval_already_decided");
    server.stop().await;
}

#[tokio::test]
async fn a_denial_reaches_the_model_with_its_reason_and_the_run_goes_on() {
    let Setup {
        server,
        provider,
        ran,
    } = setup(script("I did not delete it.")).await;
    let (run_id, approval_id) = start_waiting(&server).await;
    let (status, run) = decide(
        &server,
        &run_id,
        &approval_id,
        json!({"decision": "deny", "reason": "keep the build, token=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let done = until(&server, &run_id, "completed").await;
    assert_eq!(done["result"]["text"], "I did not delete it.");
    assert!(ran.lock().unwrap().is_empty());
    let result = tool_result(&provider, 1);
    assert!(result.contains("keep the build"), "{result}");
    assert!(
        !result.contains("sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"),
        "{result}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_request_nobody_answers_lapses_into_a_denial() {
    let config = CoordinatorConfig {
        approval_sweep_ms: 20,
        ..CoordinatorConfig::default()
    };
    let Setup {
        server,
        provider,
        ran,
    } = setup_with(
        config,
        script("Nobody answered."),
        Duration::from_millis(300),
        None,
    )
    .await;
    let (run_id, approval_id) = start_waiting(&server).await;
    let done = until(&server, &run_id, "completed").await;
    assert_eq!(done["result"]["text"], "Nobody answered.");
    assert!(ran.lock().unwrap().is_empty());
    let result = tool_result(&provider, 1);
    assert!(result.contains(EXPIRED_REASON), "{result}");
    // Lapsed is decided: a late answer is refused.
    let (status, body) = decide(
        &server,
        &run_id,
        &approval_id,
        json!({"decision": "approve_once"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn a_waiting_run_can_be_cancelled_and_then_takes_no_decision() {
    let Setup {
        server,
        provider,
        ran,
    } = setup(script("unused")).await;
    let (run_id, approval_id) = start_waiting(&server).await;
    let (status, cancelled) = server.delete(&format!("/runs/{run_id}")).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled.get("pending_approvals").is_none(), "{cancelled}");
    let (status, body) = decide(
        &server,
        &run_id,
        &approval_id,
        json!({"decision": "approve_once"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "run_not_waiting_approval");
    assert_eq!(body["status"], "cancelled");
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(provider.requests().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn every_bad_decision_request_gets_a_json_4xx() {
    let Setup { server, .. } = setup(script("unused")).await;
    let (run_id, approval_id) = start_waiting(&server).await;
    let url = |run: &str, approval: &str| server.url(&format!("/runs/{run}/approvals/{approval}"));

    let (status, body) = decide(
        &server,
        "run_nope",
        &approval_id,
        json!({"decision": "deny"}),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("run_not_found")),
        "{body}"
    );
    let long = "x".repeat(2000);
    for unknown in ["apr_nope", "..", "%2E%2E%2Fx", "a%00b", long.as_str()] {
        let (status, body) = server
            .send(
                server
                    .client
                    .post(url(&run_id, unknown))
                    .json(&json!({"decision": "deny"})),
            )
            .await;
        assert!(status == 404, "{unknown}: {status} {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let bad_bodies: [(&str, u16, &str); 9] = [
        ("{not json", 400, "malformed_json"),
        ("", 400, "malformed_json"),
        (r#"{"decision":"maybe"}"#, 400, "invalid_request"),
        (
            r#"{"decision":"approve_once","extra":1}"#,
            400,
            "invalid_request",
        ),
        (
            r#"{"decision":"approve_once","reason":"why"}"#,
            400,
            "invalid_request",
        ),
        (r#"{"decision":"deny","reason":7}"#, 400, "invalid_request"),
        (r#"{"reason":"no decision"}"#, 400, "invalid_request"),
        (r#""approve_once""#, 400, "invalid_request"),
        (r#"[{"decision":"deny"}]"#, 400, "invalid_request"),
    ];
    for (body, code, error) in bad_bodies {
        let (status, answer) = server
            .send(
                server
                    .client
                    .post(url(&run_id, &approval_id))
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await;
        assert_eq!(status, code, "{body}: {answer}");
        assert_eq!(answer["error"], error, "{body}: {answer}");
    }
    let (status, answer) = server
        .send(
            server
                .client
                .post(url(&run_id, &approval_id))
                .header("content-type", "text/plain")
                .body(r#"{"decision":"approve_once"}"#),
        )
        .await;
    assert_eq!(status, 415, "{answer}");
    let (status, answer) = server
        .send(server.client.get(url(&run_id, &approval_id)))
        .await;
    assert_eq!(status, 405, "{answer}");
    let (status, answer) = server
        .send(
            server
                .client
                .post(server.url(&format!("/runs/{run_id}/approvals/")))
                .json(&json!({"decision": "deny"})),
        )
        .await;
    assert_eq!(status, 404, "{answer}");
    // None of it decided anything: the run still waits for the same request.
    let still = until(&server, &run_id, "waiting_approval").await;
    assert_eq!(
        still["pending_approvals"][0]["approval_id"],
        approval_id.as_str()
    );
    // A run that never waited has no approvals.
    let other = start(&server, "chatter").await;
    server.finished(&other).await;
    let (status, body) = decide(&server, &other, &approval_id, json!({"decision": "deny"})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("approval_not_found")),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_session_store_a_deferred_run_fails_instead_of_waiting_forever() {
    let provider = Arc::new(ScriptedProvider::new(script("unused")));
    let tools = registry(vec![Arc::new(Delete::default()) as Arc<dyn Tool>]);
    let mut deps = RunnerDeps::new(tools, ".").with_provider(provider, "test-model");
    deps.permission_broker = Some(Arc::new(DeferAll::new(Duration::from_secs(60))));
    let server = Served::with(CoordinatorConfig::default(), blueprints(), deps).await;
    let run_id = start(&server, "cleaner").await;
    let run = until(&server, &run_id, "failed").await;
    assert_eq!(run["error"]["kind"], "config", "{run}");
    server.stop().await;
}

#[tokio::test]
async fn a_waiting_run_survives_its_coordinator_and_resumes_on_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let config = CoordinatorConfig {
        db: Some(dir.path().join("runs.db")),
        ..CoordinatorConfig::default()
    };
    let memory_path = dir.path().join("memory.db");
    let memory = || -> Arc<dyn Memory> {
        Arc::new(SqliteMemory::open(&memory_path, SqliteConfig::default()).unwrap())
    };
    let first = setup_with(
        config.clone(),
        script("unused"),
        Duration::from_secs(3600),
        Some(memory()),
    )
    .await;
    let (run_id, approval_id) = start_waiting(&first.server).await;
    first.server.stop().await;

    // The next coordinator does not recover the waiting run as interrupted.
    let second = setup_with(
        config,
        vec![ScriptedTurn::text("Done after the restart.")],
        Duration::from_secs(3600),
        Some(memory()),
    )
    .await;
    let again = until(&second.server, &run_id, "waiting_approval").await;
    assert_eq!(
        again["pending_approvals"][0]["approval_id"],
        approval_id.as_str()
    );
    let (status, body) = decide(
        &second.server,
        &run_id,
        &approval_id,
        json!({"decision": "approve_for_session"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let done = until(&second.server, &run_id, "completed").await;
    assert_eq!(done["result"]["text"], "Done after the restart.");
    assert_eq!(second.ran.lock().unwrap().len(), 1);
    assert_eq!(tool_result(&second.provider, 0), "deleted");
    assert_eq!(done["usage"]["turns"], 2, "{done}");
    second.server.stop().await;
}

/// Polls `GET /runs/{id}` (up to 2 s) until the run waits for approval or ended.
async fn settled(server: &Served, run_id: &str) -> Value {
    for _ in 0..200 {
        let (_, run) = server.get(&format!("/runs/{run_id}")).await;
        if run["status"] == "waiting_approval" || run["status"] == "completed" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never settled");
}

#[tokio::test]
async fn a_run_waits_as_often_as_it_must_and_each_decision_is_delivered_once() {
    let turns = vec![
        ScriptedTurn::tool_calls(vec![
            ToolCall::new(CallId::from("call_a"), "delete_path", r#"{"path":"a"}"#),
            ToolCall::new(CallId::from("call_b"), "delete_path", r#"{"path":"b"}"#),
        ]),
        ScriptedTurn::text("Both gone."),
    ];
    let Setup {
        server,
        provider,
        ran,
    } = setup(turns).await;
    let run_id = start(&server, "cleaner").await;
    let mut decided: Vec<String> = Vec::new();
    let mut run = settled(&server, &run_id).await;
    while run["status"] == "waiting_approval" {
        assert!(decided.len() < 2, "more requests than calls: {run}");
        let pending = run["pending_approvals"].as_array().unwrap().clone();
        for (n, request) in pending.iter().enumerate() {
            let approval_id = request["approval_id"].as_str().unwrap();
            assert!(!decided.iter().any(|id| id == approval_id), "asked twice");
            let (status, after) = decide(
                &server,
                &run_id,
                approval_id,
                json!({"decision": "approve_once"}),
            )
            .await;
            assert_eq!(status, 200, "{after}");
            if n + 1 < pending.len() {
                // Not the last: the run still waits, for the others only.
                assert_eq!(after["status"], "waiting_approval", "{after}");
                assert_eq!(
                    after["pending_approvals"].as_array().unwrap().len(),
                    pending.len() - n - 1
                );
            }
            decided.push(approval_id.to_owned());
        }
        run = settled(&server, &run_id).await;
    }
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["result"]["text"], "Both gone.");
    assert_eq!(decided.len(), 2);
    assert_eq!(
        *ran.lock().unwrap(),
        vec![json!({"path": "a"}), json!({"path": "b"})]
    );
    // The calls waited for people, not for the model: two model requests in all.
    assert_eq!(provider.requests().len(), 2);
    server.stop().await;
}
