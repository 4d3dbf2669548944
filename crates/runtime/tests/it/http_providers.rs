//! The runtime against real provider clients talking to a local HTTP server that
//! replays streams recorded from the OpenAI and Anthropic APIs.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use oxydra_provider::{AnthropicProvider, OpenAiProvider, ProviderConfig};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_test_support::{MockServer, Reply, anthropic, fixture, openai};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{RuntimeEvent, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

/// A provider endpoint as strict as the real one about where and what it is sent
/// (only `POST path`, JSON bodies), replaying the recorded `streams` in order.
fn replay(path: &str, streams: &[&str]) -> MockServer {
    MockServer::builder()
        .only("POST", path)
        .replies(
            streams
                .iter()
                .map(|name| Reply::sse(fixture(name)))
                .collect(),
        )
        .start()
        .unwrap()
}

/// The JSON bodies the server received.
fn bodies(server: &MockServer) -> Vec<Value> {
    server.requests().into_iter().map(|r| r.body).collect()
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
    let server = replay(
        openai::CHAT_PATH,
        &[
            "openai/gpt4o_mini_stream_turn1.sse",
            "openai/gpt4o_mini_stream_turn2.sse",
        ],
    );
    let provider = Arc::new(OpenAiProvider::new(ProviderConfig::new(
        server.openai_url(),
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
        .session(&SessionId::generate())
        .prompt("What is the capital of the UK?")
        .await
        .unwrap();
    assert!(
        outcome.final_text.starts_with("The capital of"),
        "{}",
        outcome.final_text
    );
    assert_eq!(outcome.turns, 2);
    assert!(outcome.usage.input_tokens >= 53);

    let bodies = bodies(&server);
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
    let server = replay(
        anthropic::MESSAGES_PATH,
        &[
            "anthropic/tool_use_response.sse",
            "anthropic/basic_response.sse",
        ],
    );
    let provider = Arc::new(AnthropicProvider::new(ProviderConfig::new(
        server.url(""),
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
        .session(&SessionId::generate())
        .prompt("Weather in Paris?")
        .await
        .unwrap();
    assert_eq!(outcome.turns, 2);
    assert!(!outcome.final_text.is_empty());
    let bodies = bodies(&server);
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
    // A llama.cpp server: it refuses (500) what such a server refuses.
    let server = MockServer::builder()
        .only("POST", openai::CHAT_PATH)
        .strict_openai()
        .replies(vec![
            Reply::sse(fixture("local/llamacpp_tool_call_cut_by_length.sse")),
            Reply::sse(fixture("local/llamacpp_qwen3_reasoning_then_tool_call.sse")),
            Reply::sse(fixture("openai/gpt4o_mini_stream_turn2.sse")),
        ])
        .start()
        .unwrap();
    let provider = Arc::new(OpenAiProvider::new(ProviderConfig::new(
        server.openai_url(),
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
        .session(&SessionId::generate())
        .prompt("2 - 5?")
        .await
        .unwrap();
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.final_text, "The capital of the UK is London.");
    // The call cut by `length` never ran: the model is told the output limit cut it
    // off. The whole call ran once.
    assert_eq!(records.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(subtracts.load(std::sync::atomic::Ordering::SeqCst), 1);
    let bodies = bodies(&server);
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
            .contains("output-token limit"),
        "{result}"
    );
    // Reasoning stays out of the conversation sent back.
    let third = bodies[2]["messages"].to_string();
    assert!(!third.contains("Okay, the user wants"), "{third}");
}
