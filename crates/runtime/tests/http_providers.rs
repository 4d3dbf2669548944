#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

//! The runtime against real provider clients talking to a local HTTP server that
//! replays streams recorded from the OpenAI and Anthropic APIs.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use common::*;
use oxydra_provider::{AnthropicProvider, OpenAiProvider, ProviderConfig};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{RuntimeEvent, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::env::var_os("OXYDRA_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
        });
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

#[derive(Clone, Default)]
struct Replay {
    streams: Arc<Mutex<Vec<Vec<u8>>>>,
    bodies: Arc<Mutex<Vec<Value>>>,
}

async fn serve(State(replay): State<Replay>, body: String) -> Response {
    replay
        .bodies
        .lock()
        .unwrap()
        .push(serde_json::from_str(&body).unwrap());
    let next = {
        let mut streams = replay.streams.lock().unwrap();
        if streams.is_empty() {
            None
        } else {
            Some(streams.remove(0))
        }
    };
    match next {
        Some(stream) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(stream))
            .unwrap(),
        None => Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                r#"{"error":{"message":"script exhausted","type":"invalid_request_error"}}"#,
            ))
            .unwrap(),
    }
}

async fn start(path: &str, streams: Vec<Vec<u8>>) -> (String, Replay) {
    let replay = Replay {
        streams: Arc::new(Mutex::new(streams)),
        bodies: Arc::default(),
    };
    let app = Router::new()
        .route(path, post(serve))
        .with_state(replay.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), replay)
}

/// Answers `get_capital` / `get_weather` like the recorded conversations expect.
struct Lookup(&'static str, &'static str, &'static str);

#[async_trait]
impl Tool for Lookup {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            self.0,
            "Looks something up",
            json!({"type":"object","properties":{self.1:{"type":"string"}},"required":[self.1]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.2))
    }
}

#[tokio::test]
async fn openai_streams_drive_a_tool_turn_and_an_answer() {
    let (base, replay) = start(
        "/v1/chat/completions",
        vec![
            fixture("openai/gpt4o_mini_stream_turn1.sse"),
            fixture("openai/gpt4o_mini_stream_turn2.sse"),
        ],
    )
    .await;
    let provider = Arc::new(OpenAiProvider::new(ProviderConfig::new(
        format!("{base}/v1"),
        Some("test-key".into()),
    )));
    let events = Arc::new(CollectingEventSink::new());
    let runtime = AgentRuntime::builder()
        .provider(provider)
        .model("gpt-4o-mini")
        .tools(registry(vec![Arc::new(Lookup(
            "get_capital",
            "country",
            "London",
        ))]))
        .event_sink(events.clone())
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap();
    let outcome = runtime
        .run_session(
            &SessionId::generate(),
            "What is the capital of the UK?",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        outcome.final_text.starts_with("The capital of"),
        "{}",
        outcome.final_text
    );
    assert_eq!(outcome.turns, 2);
    assert!(outcome.usage.input_tokens >= 53);

    let bodies = replay.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "get_capital");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert_eq!(tool["tool_call_id"], "call_ZR5UUuTt3pf61kjwAJIYdVMj");
    assert_eq!(tool["content"], "London");
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"country":"UK"}"#
    );

    let deltas = events
        .events()
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 1, "text arrived in pieces");
}

#[tokio::test]
async fn anthropic_streams_drive_a_tool_turn_and_an_answer() {
    let (base, replay) = start(
        "/v1/messages",
        vec![
            fixture("anthropic/tool_use_response.sse"),
            fixture("anthropic/basic_response.sse"),
        ],
    )
    .await;
    let provider = Arc::new(AnthropicProvider::new(ProviderConfig::new(
        base,
        Some("test-key".into()),
    )));
    let runtime = AgentRuntime::builder()
        .provider(provider)
        .model("claude-sonnet-4-20250514")
        .system_prompt("You check the weather.")
        .tools(registry(vec![Arc::new(Lookup(
            "get_weather",
            "location",
            "sunny, 21 C",
        ))]))
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap();
    let outcome = runtime
        .run_session(
            &SessionId::generate(),
            "Weather in Paris?",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.turns, 2);
    assert!(!outcome.final_text.is_empty());
    let bodies = replay.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies[0]["system"]
            .to_string()
            .contains("You check the weather.")
    );
    let second = bodies[1]["messages"].to_string();
    assert!(
        second.contains("toolu_01NRLabsLyVHZPKxbKvkfSMn"),
        "{second}"
    );
    assert!(second.contains("sunny, 21 C"), "{second}");
}

/// A tool that counts its executions.
struct Counted(&'static str, Arc<std::sync::atomic::AtomicUsize>);

#[async_trait]
impl Tool for Counted {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(self.0, "Counts its calls", json!({"type":"object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(ToolOutput::text("-3"))
    }
}

#[tokio::test]
async fn llama_cpp_streams_with_a_cut_call_and_reasoning_drive_a_run() {
    let (base, replay) = start(
        "/v1/chat/completions",
        vec![
            fixture("local/llamacpp_tool_call_cut_by_length.sse"),
            fixture("local/llamacpp_qwen3_reasoning_then_tool_call.sse"),
            fixture("openai/gpt4o_mini_stream_turn2.sse"),
        ],
    )
    .await;
    let provider = Arc::new(OpenAiProvider::new(ProviderConfig::new(
        format!("{base}/v1"),
        None,
    )));
    let records = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let subtracts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runtime = AgentRuntime::builder()
        .provider(provider)
        .model("qwen3")
        .tools(registry(vec![
            Arc::new(Counted("record", records.clone())),
            Arc::new(Counted("subtract", subtracts.clone())),
        ]))
        .event_sink(Arc::new(CollectingEventSink::new()))
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap();
    let outcome = runtime
        .run_session(&SessionId::generate(), "2 - 5?", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.final_text, "The capital of the UK is London.");
    // The call cut by `length` never ran: its half-JSON came back as an error the
    // model can correct. The whole call ran once.
    assert_eq!(records.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(subtracts.load(std::sync::atomic::Ordering::SeqCst), 1);
    let bodies = replay.bodies.lock().unwrap().clone();
    let second = bodies[1]["messages"].as_array().unwrap();
    let cut = second.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(cut["content"], "", "never null beside tool calls");
    assert_eq!(
        cut["tool_calls"][0]["function"]["arguments"],
        r#"{"note": "The"#
    );
    let result = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{result}"
    );
    // Reasoning stays out of the conversation sent back.
    let third = bodies[2]["messages"].to_string();
    assert!(!third.contains("Okay, the user wants"), "{third}");
}
