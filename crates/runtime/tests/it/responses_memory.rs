//! The runtime with the Responses API client and SQLite memory: a recorded gpt-5
//! reasoning item is stored with its assistant message, sent back on the next turn,
//! and sent back again after the session is restored from the database file.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_provider::{OpenAiResponsesProvider, ProviderConfig};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_test_support::responses::{self, strict_server};
use oxydra_test_support::{Reply, fixture, fixture_text};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{ReasoningPart, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

const RECORDED: &str = "openai-responses/gpt5_reasoning_function_call.sse";

/// The recorded conversation's tool.
struct FinalResult;

#[async_trait]
impl Tool for FinalResult {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            "final_result",
            "The final response which ends this conversation",
            json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}),
        )
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("Final result processed."))
    }
}

/// The reasoning item of the recording, as OpenAI sent it.
fn recorded_item() -> Value {
    fixture_text(RECORDED)
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str::<Value>(data).unwrap())
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .map(|e| e["item"].clone())
        .unwrap()
}

fn runtime(url: String, memory: Arc<SqliteMemory>) -> AgentRuntime {
    AgentRuntime::builder()
        .provider(Arc::new(OpenAiResponsesProvider::new(ProviderConfig::new(
            url,
            Some("sk-test".into()),
        ))))
        .model("gpt-5")
        .tools(registry(vec![Arc::new(FinalResult)]))
        .memory(memory)
        .event_sink(Arc::new(CollectingEventSink::new()))
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap()
}

/// The reasoning and function-call items of `input`, from the first reasoning item on.
fn reasoning_and_call(input: &[Value]) -> (Value, Value) {
    let at = input
        .iter()
        .position(|item| item["type"] == "reasoning")
        .expect("a reasoning item in the input");
    (input[at].clone(), input[at + 1].clone())
}

#[tokio::test]
async fn reasoning_is_stored_and_sent_back_after_a_restore() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    let recorded = recorded_item();
    let expected_item = json!({"type": "reasoning", "id": recorded["id"], "summary": [],
                               "encrypted_content": recorded["encrypted_content"]});
    {
        let server = strict_server(vec![
            Reply::sse(fixture(RECORDED)),
            responses::text("The result is 6666."),
        ])
        .unwrap();
        let memory = Arc::new(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
        let outcome = runtime(server.openai_url(), memory.clone())
            .session(&session)
            .prompt("What is 6666?")
            .await
            .unwrap();
        assert_eq!(outcome.final_text, "The result is 6666.");
        let input = server.requests()[1].body["input"]
            .as_array()
            .unwrap()
            .clone();
        let (item, call) = reasoning_and_call(&input);
        assert_eq!(item, expected_item);
        assert_eq!(call["call_id"], "call_CWXgs68YprAjp6t0371hiPOI");

        let stored = memory.messages(&session).await.unwrap();
        let parts: Vec<&ReasoningPart> = stored.iter().flat_map(|m| &m.message.reasoning).collect();
        assert_eq!(
            parts,
            vec![&ReasoningPart::Reasoning {
                id: recorded["id"].as_str().unwrap().into(),
                summary: vec![],
                encrypted_content: recorded["encrypted_content"].as_str().map(str::to_owned),
            }]
        );
    }
    // A new runtime over the reopened file: the restored history still carries it.
    let server = strict_server(vec![responses::text("Still 6666.")]).unwrap();
    let memory = Arc::new(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
    runtime(server.openai_url(), memory)
        .session(&session)
        .prompt("Again?")
        .await
        .unwrap();
    let input = server.requests()[0].body["input"]
        .as_array()
        .unwrap()
        .clone();
    let (item, call) = reasoning_and_call(&input);
    assert_eq!(item, expected_item);
    assert_eq!(call["type"], "function_call");
    assert_eq!(
        input.last().unwrap(),
        &json!({"role": "user", "content": "Again?"})
    );
}
