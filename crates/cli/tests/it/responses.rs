//! `oxydra run --api responses` end to end against a Responses mock as strict as
//! OpenAI: reasoning items are stored with the session and sent back, unchanged, on
//! the next turn and after the session is restored by a new process;
//! `--reasoning-effort` reaches both OpenAI APIs; `--api` and `reasoning_effort` with
//! another provider kind are usage errors naming the flag or key.

use crate::common;

use common::{Sandbox, json_lines, stderr};
use oxydra_test_support::responses::{self, strict_server};
use oxydra_test_support::{MockServer, openai};
use serde_json::{Value, json};

fn input_of(body: &Value) -> Vec<Value> {
    body["input"].as_array().unwrap().clone()
}

/// The input items of the assistant turn that read a.txt, as they must go back.
fn turn_one_items() -> Vec<Value> {
    vec![
        json!({"type": "reasoning", "id": "rs_e2e", "encrypted_content": "gAAAA-e2e-blob",
               "summary": [{"type": "summary_text", "text": "**Reading the file**"}]}),
        json!({"type": "function_call", "call_id": "call_r", "name": "file_read",
               "arguments": "{\"path\":\"a.txt\"}"}),
    ]
}

#[test]
fn reasoning_is_stored_and_sent_back_on_the_next_turn_and_after_a_restore() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha contents").unwrap();
    let server = strict_server(vec![
        responses::reasoning_then_calls(
            ("rs_e2e", "**Reading the file**", "gAAAA-e2e-blob"),
            &[("call_r", "file_read", r#"{"path":"a.txt"}"#)],
        ),
        responses::text("a.txt says alpha."),
    ])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &[
            "--api",
            "responses",
            "--model",
            "gpt-5-mini",
            "--reasoning-effort",
            "low",
            "--output",
            "jsonl",
        ],
        "What does a.txt say?",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["text"], "a.txt says alpha.");
    let session = last["session_id"].as_str().unwrap().to_owned();
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "reasoning_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "**Reading the file**");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    let first = &requests[0].body;
    assert_eq!(first["model"], "gpt-5-mini");
    assert_eq!(first["store"], false);
    assert_eq!(
        first["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert!(
        first["instructions"].is_string(),
        "the system prompt is the instructions"
    );
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "file_read")
        .unwrap();
    assert_eq!(tool["type"], "function");
    // Turn 2: the reasoning item, then its call, then the call's output.
    let input = input_of(&requests[1].body);
    assert_eq!(
        input[0],
        json!({"role": "user", "content": "What does a.txt say?"})
    );
    assert_eq!(input[1..3], turn_one_items()[..]);
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], "call_r");
    assert!(
        input[3]["output"]
            .as_str()
            .unwrap()
            .contains("alpha contents")
    );

    // A new process restores the session from the database: the reasoning item is
    // still there, unchanged, before its call.
    let again = strict_server(vec![responses::text("Still alpha.")]).unwrap();
    let output = sandbox.run_openai(
        &again.openai_url(),
        &[
            "--api",
            "responses",
            "--model",
            "gpt-5-mini",
            "--session",
            &session,
            "--output",
            "jsonl",
        ],
        "And now?",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let input = input_of(&again.requests()[0].body);
    let at = input
        .iter()
        .position(|item| item["type"] == "reasoning")
        .expect("the restored session sends its reasoning item back");
    assert_eq!(input[at..at + 2], turn_one_items()[..]);
    assert_eq!(input[at + 2]["type"], "function_call_output");
    assert_eq!(
        input[at + 3],
        json!({"role": "assistant", "content": "a.txt says alpha."})
    );
    assert_eq!(
        input.last().unwrap(),
        &json!({"role": "user", "content": "And now?"})
    );
    assert!(
        again.requests()[0].body.get("reasoning").is_none(),
        "no effort this time"
    );
}

#[test]
fn the_file_chooses_the_responses_api_and_the_effort() {
    let sandbox = Sandbox::new();
    let server = strict_server(vec![responses::text("Hi from responses.")]).unwrap();
    sandbox.write_trusted_config(&format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"o3-mini\"\napi = \"responses\"\nreasoning_effort = \"high\"\n",
        server.openai_url()
    ));
    let mut command = sandbox.stored_command("run");
    let output = command
        .args(["--output", "jsonl", "Hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(
        json_lines(&output).last().unwrap()["text"],
        "Hi from responses."
    );
    let body = &server.requests()[0].body;
    assert_eq!(body["reasoning"]["effort"], "high");
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn reasoning_effort_reaches_chat_completions() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("Hi.")]).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--model", "o3-mini", "--reasoning-effort", "minimal"],
        "Hello",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["reasoning_effort"], "minimal");
}

#[test]
fn api_and_effort_belong_to_the_openai_kind() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["run", "--provider", "anthropic", "--api", "responses", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--api"), "{}", stderr(&output));

    sandbox.write_trusted_config("[provider]\nkind = \"anthropic\"\nreasoning_effort = \"low\"\n");
    let output = sandbox
        .command()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["run", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("provider.reasoning_effort") && text.contains("oxydra.toml"),
        "{text}"
    );

    let output = sandbox
        .command()
        .args(["run", "--api", "assistants", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("assistants"),
        "{}",
        stderr(&output)
    );
}
