//! Approvals that wait, as the tests of `oxydra serve` and `oxydra mcp serve` drive
//! them: an agent that writes a file behind consent, a provider that asks for that
//! write, and the HTTP calls that list and decide the request.

use std::time::{Duration, Instant};

use oxydra_test_support::{MockServer, openai};
use serde_json::{Value, json};

use super::PATIENCE;
use super::serve::{Server, get_json};

/// The call the model asks for: a write whose content holds an escape sequence, which
/// a person must see escaped.
pub const WRITE: &str = r#"{"path":"out.txt","content":"hello \u001b[31mred\u001b[0m"}"#;

/// What `out.txt` holds once the call ran.
pub const WRITTEN: &str = "hello \u{1b}[31mred\u{1b}[0m";

/// `approve = "ask"`, a ten-minute TTL, one worker slot, and `file_write` behind
/// consent.
pub const ASK_CONFIG: &str = r#"
[runtime]
approve = "ask"

[serve]
approval_ttl_secs = 600
max_concurrent_runs = 1

[[rules]]
tool = "file_write"
kind = "requires_consent"

[[agents]]
name = "writer"
type = "agent"
description = "Writes files"
system_prompt = "You write files."
tools = ["file_write"]
"#;

/// A strict provider: a request that carries a tool result gets the final answer, a
/// prompt saying "no tools" a plain answer, any other the `file_write` call.
pub fn writer_provider() -> MockServer {
    MockServer::builder()
        .strict_openai()
        .respond_with(|request| {
            let body = request.body.to_string();
            if body.contains("\"role\":\"tool\"") {
                openai::text("done")
            } else if body.contains("no tools") {
                openai::text("nothing to write")
            } else {
                openai::tool_calls(&[("call_w", "file_write", WRITE)])
            }
        })
        .start()
        .unwrap()
}

/// The content of the tool message in the provider's last request that has one.
pub fn last_tool_result(provider: &MockServer) -> String {
    provider
        .requests()
        .iter()
        .rev()
        .find_map(|request| {
            request.body["messages"]
                .as_array()?
                .iter()
                .find(|message| message["role"] == "tool")
                .map(|message| message["content"].to_string())
        })
        .expect("no request carried a tool result")
}

/// Posts a `writer` run with `prompt` and returns its id.
pub async fn start_run(client: &reqwest::Client, server: &Server, prompt: &str) -> String {
    let created = client
        .post(server.url("/runs"))
        .json(&json!({"agent_name": "writer", "parameters": {"prompt": prompt}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    created["run_id"].as_str().unwrap().to_owned()
}

/// Polls `GET /runs/{id}` on `base` until its status is `status` (60 s at most).
pub async fn wait_for_status(
    client: &reqwest::Client,
    base: &str,
    run_id: &str,
    status: &str,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let run = get_json(client, &format!("{base}/runs/{run_id}")).await;
        if run["status"] == status {
            return run;
        }
        let ended = ["completed", "failed", "cancelled"];
        assert!(
            !ended.contains(&run["status"].as_str().unwrap_or_default()),
            "run ended before it became {status}: {run}"
        );
        assert!(
            Instant::now() < deadline,
            "run never became {status}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `POST /runs/{id}/approvals/{approval_id}` with `body`: the status and the JSON body.
pub async fn decide(
    client: &reqwest::Client,
    base: &str,
    run_id: &str,
    approval_id: &str,
    body: &Value,
) -> (u16, Value) {
    let response = client
        .post(format!("{base}/runs/{run_id}/approvals/{approval_id}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Checks the one pending request of a waiting run and returns its id.
pub fn the_pending_write(run: &Value) -> String {
    let pending = run["pending_approvals"].as_array().unwrap_or_else(|| {
        panic!("no pending_approvals: {run}");
    });
    assert_eq!(pending.len(), 1, "{run}");
    let request = &pending[0];
    assert_eq!(request["tool"], "file_write", "{run}");
    let arguments = request["arguments"].as_str().unwrap();
    assert!(arguments.contains("out.txt"), "{arguments}");
    // What a person sees is escaped: no raw escape character reaches their terminal.
    assert!(!arguments.contains('\u{1b}'), "{arguments:?}");
    assert!(arguments.contains("\\u001b"), "{arguments}");
    assert!(request["requested_at"].as_i64().unwrap() > 0, "{run}");
    request["approval_id"].as_str().unwrap().to_owned()
}
