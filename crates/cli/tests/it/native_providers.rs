//! `--provider gemini` and `--provider ollama` through the binary, against a local
//! server speaking each API.

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, Reply};
use serde_json::json;

/// A Gemini stream: one chunk per part, then the usage-bearing last chunk.
fn gemini_sse(parts: &[serde_json::Value], finish: &str, prompt_tokens: u64) -> Reply {
    let mut body = String::new();
    for part in parts {
        let chunk =
            json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]});
        body.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    let last = json!({
        "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": 7, "thoughtsTokenCount": 3},
    });
    body.push_str(&format!("data: {last}\r\n\r\n"));
    Reply::sse(body)
}

#[test]
fn gemini_runs_a_tool_turn_and_sends_the_signature_back() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.workspace.join("notes.md"),
        "# Notes\nship on friday",
    )
    .unwrap();
    let server = MockServer::start(vec![
        gemini_sse(
            &[
                json!({"text": "Checking the notes.", "thought": true}),
                json!({"functionCall": {"name": "file_read", "args": {"path": "notes.md"}}, "thoughtSignature": "sig-of-the-call"}),
            ],
            "STOP",
            40,
        ),
        gemini_sse(&[json!({"text": "We ship on Friday."})], "STOP", 90),
    ])
    .unwrap();
    let mut command = sandbox.stored_command("run");
    command
        .env("GEMINI_API_KEY", "AIza-test-0123456789")
        .args(["--provider", "gemini", "--base-url", &server.url("")])
        .args(["--output", "jsonl", "When do we ship?"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["text"], "We ship on Friday.");
    assert_eq!(last["usage"]["input_tokens"], 130);
    assert_eq!(last["usage"]["reasoning_tokens"], 6);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_completed" && e["name"] == "file_read")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.path,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        );
        assert_eq!(request.query.as_deref(), Some("alt=sse"));
    }
    let contents = requests[1].body["contents"].as_array().unwrap();
    let model = contents.iter().find(|c| c["role"] == "model").unwrap();
    let call = model["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .unwrap();
    assert_eq!(call["thoughtSignature"], "sig-of-the-call");
    let answer = contents.last().unwrap()["parts"][0]["functionResponse"].clone();
    assert_eq!(answer["name"], "file_read");
    assert!(answer["response"].to_string().contains("ship on friday"));
}

#[test]
fn gemini_key_comes_from_gemini_api_key() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![gemini_sse(&[json!({"text": "ok"})], "STOP", 5)]).unwrap();
    sandbox.write_trusted_config(&format!(
        "[provider]\nkind = \"gemini\"\nbase_url = \"{}\"\napi_key_env = \"GEMINI_API_KEY\"\nmodel = \"gemini-2.5-pro\"\n",
        server.url("")
    ));
    let output = sandbox
        .stored_command("run")
        .env("GEMINI_API_KEY", "AIza-from-env-0123")
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let request = &server.requests()[0];
    assert_eq!(request.header("x-goog-api-key"), Some("AIza-from-env-0123"));
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    );
}

#[test]
fn print_config_and_the_no_provider_message_know_gemini() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command()
        .env("GEMINI_API_KEY", "AIza-secret-0123456789")
        .args(["run", "--print-config"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = stdout(&output);
    assert!(printed.contains("kind = \"gemini\""), "{printed}");
    assert!(
        printed.contains("generativelanguage.googleapis.com"),
        "{printed}"
    );
    assert!(printed.contains("GEMINI_API_KEY"), "{printed}");
    assert!(!printed.contains("AIza-secret-0123456789"), "{printed}");

    let output = sandbox.command().args(["run", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("GEMINI_API_KEY"), "{message}");
    assert!(message.contains("--provider ollama"), "{message}");

    let output = sandbox
        .command()
        .args(["run", "--provider", "gemini", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("GEMINI_API_KEY"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn ollama_native_api_needs_no_key() {
    let sandbox = Sandbox::new();
    let body = concat!(
        "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"short\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"Hello from Ollama.\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":12,\"eval_count\":4}\n",
    );
    let server = MockServer::start(vec![
        Reply::new(200)
            .header("content-type", "application/x-ndjson")
            .body(body),
    ])
    .unwrap();
    let output = sandbox
        .stored_command("run")
        .args(["--provider", "ollama", "--base-url", &server.url("")])
        .args(["--model", "qwen3", "--output", "jsonl", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events.last().unwrap()["text"], "Hello from Ollama.");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/api/chat");
    assert_eq!(request.body["model"], "qwen3");
    assert_eq!(request.authorization(), None);
}
