//! Resource limits against a hostile provider, through the real binary.

use crate::common;

use std::time::Duration;

use common::{Sandbox, events_of_type, json_lines, stderr};
use oxydra_test_support::{MockServer, Reply, openai};

/// What the endless server would send: far past any cap.
const ENDLESS: usize = 200 * 1024 * 1024;

/// An OpenAI-format server whose every answer is a stream of text deltas without end
/// (generated as it goes), until the client hangs up or [`ENDLESS`] bytes went out.
fn endless_provider() -> MockServer {
    let piece = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
        "x".repeat(4096)
    );
    MockServer::repeating(vec![Reply::sse("").endless(piece, ENDLESS)]).unwrap()
}

/// The attack: the provider streams text without end. `oxydra run` stops reading at
/// `[provider] max_response_bytes`, fails with an error that names the cap (exit 1),
/// and does not ask again.
#[test]
fn an_endless_provider_stream_stops_at_the_response_cap() {
    let sandbox = Sandbox::new();
    let cap = 1024 * 1024;
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        format!("[provider]\nmax_response_bytes = {cap}\n"),
    )
    .unwrap();
    let server = endless_provider();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl"],
        "say something",
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the response exceeded {cap} bytes")),
        "{message}"
    );
    assert_eq!(server.hits(), 1, "it was asked again");
    assert!(
        server.wait_idle(Duration::from_secs(10)),
        "the stream never ended"
    );
    let sent = server.bytes_sent();
    assert!(sent < 16 * cap, "the client read {sent} bytes");
}

/// The attack: the model searches with a pattern a megabyte long that does not
/// compile. The error, which quotes the pattern, reaches the `tool_failed` event and
/// the next request cut at the output limit, with the truncation marker, not whole.
#[test]
fn a_megabyte_tool_error_comes_back_truncated() {
    let sandbox = Sandbox::new();
    let pattern = format!("({}", "a".repeat(1_000_000));
    let args = serde_json::json!({ "pattern": pattern }).to_string();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_big", "file_search", args.as_str())]),
        openai::text("That pattern does not compile."),
    ])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl"],
        "search for it",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let failed = events_of_type(&events, "tool_failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    let error = failed[0]["error"].as_str().unwrap();
    assert!(error.len() < 20 * 1024, "an error of {} bytes", error.len());
    assert!(
        error.contains("[... truncated "),
        "{}",
        &error[error.len() - 60..]
    );
    let requests = server.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.starts_with("Tool execution failed: "),
        "{}",
        &result[..60]
    );
    assert!(
        result.len() < 20 * 1024,
        "a result of {} bytes",
        result.len()
    );
    assert!(
        result.contains("[... truncated "),
        "{}",
        &result[result.len() - 60..]
    );
}
