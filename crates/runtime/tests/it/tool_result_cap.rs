//! A tool's output bigger than the model's whole context window is cut to its share of
//! the window with a marker; the run goes on and the model reads the marker.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{
    Provider, ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse,
    ProviderStream, ScriptedProvider, ScriptedTurn,
};
use oxydra_runtime::testing::MIN_RESULT_BYTES;
use oxydra_runtime::{CancellationToken, CollectingEventSink, RuntimeLimits};
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{MessageRole, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

/// The window of the tests, in tokens.
const WINDOW: u32 = 2_000;

/// `dump`: read-only, returns `size` bytes of a listing, far more than [`WINDOW`].
struct DumpTool {
    size: usize,
}

#[async_trait]
impl Tool for DumpTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("dump", "Dumps everything", json!({"type":"object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let line = "src/some/deeply/nested/module/file_name.rs\n";
        Ok(ToolOutput::text(line.repeat(self.size / line.len() + 1)))
    }
}

/// A provider that, like a local model, refuses a prompt longer than its window,
/// counting each byte of the messages as a token (the worst a byte-level tokenizer
/// can do), and otherwise plays its script.
struct StrictWindow {
    inner: Arc<ScriptedProvider>,
    window: usize,
}

impl StrictWindow {
    fn check(&self, request: &ProviderRequest) -> Result<(), ProviderError> {
        let bytes: usize = request
            .messages
            .iter()
            .map(|m| {
                m.text().len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            })
            .sum();
        if bytes > self.window {
            return Err(ProviderError::ContextLengthExceeded {
                message: format!("{bytes} tokens in a {} window", self.window),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl Provider for StrictWindow {
    fn name(&self) -> &str {
        "strict-window"
    }
    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        ProviderCapabilities {
            context_window: WINDOW,
            ..self.inner.capabilities(model)
        }
    }
    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        self.check(request)?;
        self.inner.complete(request, cancel).await
    }
    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        self.check(request)?;
        self.inner.stream(request, cancel).await
    }
}

fn limits() -> RuntimeLimits {
    {
        let mut custom = RuntimeLimits::default();
        custom.max_output_tokens = Some(100);
        custom.safety_buffer_tokens = 0;
        custom.summary_trigger_ratio = 100.0;
        custom
    }
}

/// The attack: a 200 KB result against a 2,000-token window. Without the cap the
/// newest turn cannot be sent at all. With it the run ends with the model's answer,
/// the model read the head of the output and the marker, and the session stored what
/// the model read.
#[tokio::test]
async fn an_output_bigger_than_the_window_is_cut_and_the_run_goes_on() {
    let script = scripted(vec![
        ScriptedTurn::tool_call("c1", "dump", "{}"),
        ScriptedTurn::text("there are many modules"),
    ]);
    let provider = Arc::new(StrictWindow {
        inner: script.clone(),
        window: WINDOW as usize,
    });
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let runtime = oxydra_runtime::AgentRuntime::builder()
        .provider(provider)
        .model("test-model")
        .workspace_root(std::env::temp_dir())
        .event_sink(Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .tools(registry(vec![Arc::new(DumpTool { size: 200_000 })]))
        .limits(limits())
        .build()
        .unwrap();
    let session = SessionId::generate();
    let outcome = runtime
        .session(&session)
        .prompt("list everything")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "there are many modules");

    let requests = script.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1]);
    let [(id, content)] = results.as_slice() else {
        panic!("{results:?}");
    };
    assert_eq!(id, "c1");
    assert!(content.starts_with("src/some/deeply/nested"), "{content}");
    assert!(
        content.contains("bytes: the output is longer than the model's context window allows"),
        "{content}"
    );
    // Half of the 1,900 tokens the prompt may hold, less the schema's estimate.
    assert!(content.len() <= 950, "{}", content.len());
    assert!(content.len() >= MIN_RESULT_BYTES, "{}", content.len());

    let stored = memory.messages(&session).await.unwrap();
    let stored_result = stored
        .iter()
        .find(|m| m.message.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(stored_result.message.text(), content);
}

/// The results of one batch share the cap: two huge results each get half of it.
#[tokio::test]
async fn a_batch_of_results_shares_the_cap() {
    let script = scripted(vec![
        ScriptedTurn::tool_calls(vec![call("c1", "dump", "{}"), call("c2", "dump", "{}")]),
        ScriptedTurn::text("done"),
    ]);
    let provider = Arc::new(StrictWindow {
        inner: script.clone(),
        window: WINDOW as usize,
    });
    let runtime = oxydra_runtime::AgentRuntime::builder()
        .provider(provider)
        .model("test-model")
        .workspace_root(std::env::temp_dir())
        .event_sink(Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(DumpTool { size: 50_000 })]))
        .limits(limits())
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("dump twice")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    let results = tool_results(&script.requests()[1]);
    assert_eq!(results.len(), 2);
    let total: usize = results.iter().map(|(_, c)| c.len()).sum();
    assert!(total <= 950, "{total}");
    for (_, content) in &results {
        assert!(content.contains("[... cut "), "{content}");
    }
}

/// A model with a large window is not touched: a 10 KB result arrives whole.
#[tokio::test]
async fn a_large_window_leaves_the_output_whole() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "dump", "{}"),
        ScriptedTurn::text("ok"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(DumpTool { size: 10_000 })]))
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        .prompt("dump")
        .await
        .unwrap();
    let results = tool_results(&provider.requests()[1]);
    let (_, content) = results.first().unwrap();
    assert!(content.len() >= 10_000, "{}", content.len());
    assert!(!content.contains("[... cut "), "{content}");
}
