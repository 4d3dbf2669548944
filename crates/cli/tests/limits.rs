#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Resource limits against a hostile provider, through the real binary.

mod common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Sandbox, events_of_type, json_lines, stderr};
use oxydra_e2e::{ScriptServer, openai};

/// What the endless server would send: far past any cap.
const ENDLESS: usize = 200 * 1024 * 1024;

/// Counts of what an endless provider did.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    bytes: AtomicUsize,
}

/// An OpenAI-format server whose every answer is a stream of text deltas without end
/// (generated as it goes), until the client hangs up or [`ENDLESS`] bytes went out.
fn endless_provider() -> (String, Arc<Seen>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = Arc::clone(&seen);
    std::thread::spawn(move || {
        let piece = format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
            "x".repeat(4096)
        );
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let counts = Arc::clone(&counts);
            let piece = piece.clone();
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0_u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                counts.requests.fetch_add(1, Ordering::SeqCst);
                let headers = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                if stream.write_all(headers.as_bytes()).is_err() {
                    return;
                }
                let mut sent = 0;
                while sent < ENDLESS && stream.write_all(piece.as_bytes()).is_ok() {
                    sent += piece.len();
                    counts.bytes.fetch_add(piece.len(), Ordering::SeqCst);
                }
            });
        }
    });
    (url, seen)
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
    let (url, seen) = endless_provider();
    let output = sandbox.run_openai(&url, &["--output", "jsonl"], "say something");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events = json_lines(&output);
    let errors = events_of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:?}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the response exceeded {cap} bytes")),
        "{message}"
    );
    assert_eq!(
        seen.requests.load(Ordering::SeqCst),
        1,
        "it was asked again"
    );
    let sent = seen.bytes.load(Ordering::SeqCst);
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
    let server = ScriptServer::start(vec![
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
