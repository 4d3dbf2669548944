//! Approvals through `oxydra mcp serve` (stdio, raw JSON-RPC): with `approve = "ask"`
//! the server lists `list_pending_approvals`, and `decide_approval` only with
//! `--allow-model-approvals`; a run that waits
//! is listed, bad decisions are tool errors that say what to send, and an approval
//! lets the run finish with the call's effect on disk.

use crate::common;

use std::time::{Duration, Instant};

use common::approvals::{ASK_CONFIG, WRITTEN, the_pending_write, writer_provider};
use common::serve::sandbox_with_config;
use serde_json::{Value, json};

use crate::mcp_serve::RawSession;

/// A `tools/call` of `name` with `arguments`: its `result`.
fn call(session: &mut RawSession, id: u64, name: &str, arguments: Value) -> Value {
    session.send_line(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}})
        .to_string(),
    );
    let answer = session.read();
    assert_eq!(answer["id"], id, "{answer}");
    answer["result"].clone()
}

/// The structured content of a call that succeeded.
fn succeeded(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

/// The structured error body of a call that failed as a tool error.
fn failed(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "{result}");
    &result["structuredContent"]
}

/// Polls `get_agent_run` until the run's status is `status`.
fn wait_for(session: &mut RawSession, next_id: &mut u64, run_id: &str, status: &str) -> Value {
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        *next_id += 1;
        let result = call(
            session,
            *next_id,
            "get_agent_run",
            json!({"run_id": run_id}),
        );
        let run = succeeded(&result).clone();
        if run["status"] == status {
            return run;
        }
        assert!(Instant::now() < deadline, "never {status}: {run}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn an_mcp_client_lists_and_decides_the_approvals_a_run_waits_on() {
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ASK_CONFIG);
    let mut session = RawSession::start_with(
        &sandbox,
        &[
            "--allow-model-approvals",
            "--base-url",
            &provider.openai_url(),
        ],
    );

    session.send_line(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed = session.read();
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"list_pending_approvals") && names.contains(&"decide_approval"),
        "{names:?}"
    );
    let decide_tool = tools
        .iter()
        .find(|t| t["name"] == "decide_approval")
        .unwrap();
    assert_eq!(
        decide_tool["inputSchema"]["properties"]["decision"]["enum"],
        json!(["approve_once", "approve_for_session", "deny"])
    );
    assert_eq!(decide_tool["annotations"]["readOnlyHint"], false);

    let started = call(
        &mut session,
        3,
        "start_agent_run",
        json!({"agent_name": "writer", "parameters": {"prompt": "write out.txt"}}),
    );
    let run_id = succeeded(&started)["run_id"].as_str().unwrap().to_owned();
    let mut id = 10;
    wait_for(&mut session, &mut id, &run_id, "waiting_approval");

    let listed = call(
        &mut session,
        100,
        "list_pending_approvals",
        json!({"run_id": run_id}),
    );
    let approval_id = the_pending_write(succeeded(&listed));
    assert!(!sandbox.workspace.join("out.txt").exists(), "ran unasked");

    // Mistakes a model makes, each a tool error it can correct from.
    let missing = call(&mut session, 101, "list_pending_approvals", json!({}));
    let body = failed(&missing);
    assert_eq!(body["error"], "invalid_arguments", "{body}");
    assert!(body["input_schema"].is_object(), "{body}");
    let unknown_run = call(
        &mut session,
        102,
        "list_pending_approvals",
        json!({"run_id": "nope"}),
    );
    assert!(failed(&unknown_run)["error"].is_string(), "{unknown_run}");
    let maybe = call(
        &mut session,
        103,
        "decide_approval",
        json!({"run_id": run_id, "approval_id": approval_id, "decision": "maybe"}),
    );
    let body = failed(&maybe);
    assert_eq!(body["error"], "invalid_arguments", "{body}");
    let reasoned = call(
        &mut session,
        104,
        "decide_approval",
        json!({"run_id": run_id, "approval_id": approval_id,
               "decision": "approve_once", "reason": "looks fine"}),
    );
    let body = failed(&reasoned);
    assert_eq!(body["error"], "invalid_decision", "{body}");
    let unknown = call(
        &mut session,
        105,
        "decide_approval",
        json!({"run_id": run_id, "approval_id": "no-such-approval", "decision": "deny"}),
    );
    assert!(failed(&unknown)["error"].is_string(), "{unknown}");
    // None of that decided anything.
    let still = call(
        &mut session,
        106,
        "list_pending_approvals",
        json!({"run_id": run_id}),
    );
    assert_eq!(the_pending_write(succeeded(&still)), approval_id);

    let decided = call(
        &mut session,
        107,
        "decide_approval",
        json!({"run_id": run_id, "approval_id": approval_id, "decision": "approve_once"}),
    );
    assert_eq!(succeeded(&decided)["run_id"], run_id.as_str(), "{decided}");
    let mut id = 200;
    let run = wait_for(&mut session, &mut id, &run_id, "completed");
    assert_eq!(run["result"]["text"], "done", "{run}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join("out.txt")).unwrap(),
        WRITTEN
    );

    // Deciding again: the API's refusal, as a tool error.
    let again = call(
        &mut session,
        300,
        "decide_approval",
        json!({"run_id": run_id, "approval_id": approval_id, "decision": "deny"}),
    );
    assert!(failed(&again)["error"].is_string(), "{again}");

    let (code, rest) = session.close();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn without_the_flag_an_mcp_client_cannot_decide_an_approval() {
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ASK_CONFIG);
    let mut session = RawSession::start_with(&sandbox, &["--base-url", &provider.openai_url()]);
    session.send_line(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed = session.read();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"list_pending_approvals"), "{names:?}");
    assert!(!names.contains(&"decide_approval"), "{names:?}");
    let answer = call(
        &mut session,
        3,
        "decide_approval",
        json!({"run_id": "run_x", "approval_id": "apr_x", "decision": "approve_once"}),
    );
    // A JSON-RPC error (no result) or a tool error: either way nothing is decided.
    assert!(answer.is_null() || answer["isError"] == true, "{answer}");
}
