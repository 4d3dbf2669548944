//! Extended thinking through the runtime: the recorded thinking block of turn 1 goes
//! back unchanged before its tool call on turn 2, to a mock that refuses (as Anthropic
//! does) a thinking block that is missing or altered; usage with cache and thinking
//! counts reaches the events and the cost.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use oxydra_provider::{AnthropicProvider, ProviderConfig};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_test_support::{MockServer, Reply, anthropic, fixture, fixture_text};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{RuntimeEvent, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

const TURN_1: &str = "anthropic/haiku45_thinking_then_tool_use.sse";

/// The recording's tool: no arguments, a fixed answer.
struct FixedVersion;

#[async_trait]
impl Tool for FixedVersion {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "fixed_version",
            "The fixed version",
            json!({"type": "object", "properties": {}}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("4.2.0"))
    }
}

#[tokio::test]
async fn thinking_round_trips_through_the_runtime() {
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(vec![
            Reply::sse(fixture(TURN_1)),
            anthropic::text("Version 4.2.0: fixed, unlike my jokes."),
        ])
        .start()
        .unwrap();
    let provider = Arc::new(AnthropicProvider::new(
        ProviderConfig::new(server.url(""), Some("sk-ant".into())).with_thinking_budget(1_024),
    ));
    let events = Arc::new(CollectingEventSink::new());
    let runtime = AgentRuntime::builder()
        .provider(provider)
        .model("claude-haiku-4-5-20251001")
        .system_prompt("You answer with the version and a joke.")
        .tools(registry(vec![Arc::new(FixedVersion)]))
        .event_sink(events.clone())
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("Use the fixed_version tool, tell me the version, then a short joke.")
        .await
        .unwrap();
    assert_eq!(outcome.turns, 2);
    assert!(outcome.final_text.starts_with("Version 4.2.0"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the strict mock accepted turn 2");
    let body = &requests[1].body;
    assert_eq!(body["thinking"]["budget_tokens"], 1024);
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let kinds: Vec<&str> = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["thinking", "tool_use"]);
    // Byte-identical: the signature as recorded, and the thinking text with the very
    // JSON escapes the recording used.
    let recorded = fixture_text(TURN_1);
    let signature = recorded
        .split(r#""signature":""#)
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|s| !s.is_empty())
        .unwrap();
    let raw = String::from_utf8(requests[1].raw_body.clone()).unwrap();
    assert!(raw.contains(&format!(r#""signature":"{signature}""#)));
    assert!(raw.contains(
        r#"The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n3. Make a short joke about it\n\nLet me first call the fixed_version tool to see what version it returns."#
    ));
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01825dXWLSoJwCst1qTsiWdb"
    );

    // The thinking streamed as reasoning events; usage events carry thinking tokens.
    let events = events.events();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasoning.starts_with("The user wants me to:"));
    let first_turn = events
        .iter()
        .find_map(|e| match e {
            RuntimeEvent::TurnCompleted { turn: 1, usage } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(first_turn.input_tokens, 598);
    assert_eq!(first_turn.reasoning_tokens, 53);
    let final_usage = events
        .iter()
        .find_map(|e| match e {
            RuntimeEvent::Final { usage, cost, .. } => Some((*usage, *cost)),
            _ => None,
        })
        .unwrap();
    assert_eq!(final_usage.0.reasoning_tokens, 53);
    assert!(final_usage.1 > 0.0, "haiku 4.5 has a known price");
}
