//! Library-level end to end: the whole stack through the `oxydra` facade — an HTTP
//! provider client, the built-in tools, the executor and SQLite memory — against a local
//! server playing scripted and recorded OpenAI streams.

use std::sync::Arc;

use oxydra::memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra::provider::{OpenAiProvider, ProviderConfig};
use oxydra::runtime::{AgentRuntime, AgentRuntimeBuilder, CollectingEventSink};
use oxydra::tools::{BuiltinToolsConfig, ToolRegistry};
use oxydra::types::{MessageRole, RuntimeEvent, SessionId};
use oxydra_test_support::{MockServer, Reply, fixture, openai};

fn runtime(
    server: &MockServer,
    memory: &SqliteMemory,
    workspace: &std::path::Path,
    events: Arc<CollectingEventSink>,
) -> AgentRuntime {
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    AgentRuntime::builder()
        .provider(Arc::new(provider))
        .model("gpt-4o-mini")
        .tools(ToolRegistry::with_builtins(&BuiltinToolsConfig::default()))
        .memory(Arc::new(memory.clone()))
        .workspace_root(workspace.to_path_buf())
        .event_sink(events)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_session_survives_a_restart_of_the_whole_stack() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("plan.md"), "step one: measure").unwrap();
    let db = dir.path().join("oxydra.db");
    let session = SessionId::generate();

    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("c1", "file_read", r#"{"path":"plan.md"}"#),
            ("c2", "file_list", r#"{}"#),
        ]),
        openai::text("The plan starts with measuring."),
    ])
    .unwrap();
    let memory = SqliteMemory::open(&db, SqliteConfig::default()).unwrap();
    let events = Arc::new(CollectingEventSink::new());
    let outcome = runtime(&server, &memory, &workspace, Arc::clone(&events))
        .session(&session)
        .prompt("What does the plan say?")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "The plan starts with measuring.");
    assert_eq!(outcome.turns, 2);
    let events = events.events();
    assert!(matches!(events.last(), Some(RuntimeEvent::Final { .. })));
    let completed = events
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::ToolCompleted { .. }))
        .count();
    assert_eq!(completed, 2);
    drop(memory);

    // A new process: reopen the file, continue the session.
    let server = MockServer::start(vec![openai::text("Measure first.")]).unwrap();
    let memory = SqliteMemory::open(&db, SqliteConfig::default()).unwrap();
    let stored = memory.messages(&session).await.unwrap();
    let roles: Vec<MessageRole> = stored.iter().map(|m| m.message.role).collect();
    assert_eq!(
        roles,
        [
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::Tool,
            MessageRole::Tool,
            MessageRole::Assistant
        ]
    );
    let outcome = runtime(
        &server,
        &memory,
        &workspace,
        Arc::new(CollectingEventSink::new()),
    )
    .session(&session)
    .prompt("And first?")
    .await
    .unwrap();
    assert_eq!(outcome.final_text, "Measure first.");
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("step one: measure"), "{sent}");
    assert!(sent.contains("What does the plan say?"));
    assert_eq!(memory.messages(&session).await.unwrap().len(), 7);
}

#[tokio::test]
async fn recorded_openai_streams_drive_the_runtime() {
    let turn1 = fixture("openai/gpt4o_mini_stream_turn1.sse");
    let turn2 = fixture("openai/gpt4o_mini_stream_turn2.sse");
    let server = MockServer::start(vec![Reply::sse(turn1), Reply::sse(turn2)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let memory = SqliteMemory::open_in_memory().unwrap();
    let events = Arc::new(CollectingEventSink::new());
    let session = SessionId::generate();
    let outcome = runtime(&server, &memory, dir.path(), Arc::clone(&events))
        .session(&session)
        .prompt("What is the capital of France?")
        .await
        .unwrap();
    assert!(!outcome.final_text.is_empty());
    // The recorded call names a tool we do not have: it fails, and the model is told so.
    let failed = events
        .events()
        .into_iter()
        .find_map(|e| match e {
            RuntimeEvent::ToolFailed { name, error, .. } => Some((name, error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(failed.0, "get_capital");
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("Tool execution failed"), "{second}");
    assert!(outcome.usage.input_tokens > 0);
}

/// A stream that cannot open is retried by the `ReliableProvider` up to its policy's
/// attempts, and that is all: the runtime does not fall back to `complete` on top,
/// which would run every retry a second time.
#[tokio::test]
async fn a_failing_provider_gets_the_policy_attempts_and_no_more() {
    use oxydra::provider::RetryPolicy;
    let dir = tempfile::tempdir().unwrap();
    let bad_gateway = || Reply::json(502, r#"{"error":{"message":"bad gateway"}}"#);
    let server = MockServer::start(vec![
        bad_gateway(),
        bad_gateway(),
        bad_gateway(),
        bad_gateway(),
        openai::text("too late"),
    ])
    .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let policy = RetryPolicy::default()
        .with_max_attempts(2)
        .with_base_delay(std::time::Duration::from_millis(1));
    let runtime = AgentRuntime::builder()
        .provider(Arc::new(provider))
        .retry_policy(policy)
        .model("gpt-4o-mini")
        .tools(ToolRegistry::with_builtins(&BuiltinToolsConfig::default()))
        .workspace_root(dir.path().to_path_buf())
        .build()
        .unwrap();
    let result = runtime
        .session(&SessionId::generate())
        .prompt("hello")
        .await;
    assert!(result.is_err(), "the run should fail: {result:?}");
    assert_eq!(server.requests().len(), 2);
}

fn bad_gateway() -> Reply {
    Reply::json(502, r#"{"error":{"message":"bad gateway"}}"#)
}

fn runtime_over(provider: OpenAiProvider, workspace: &std::path::Path) -> AgentRuntimeBuilder {
    AgentRuntime::builder()
        .provider(Arc::new(provider))
        .model("gpt-4o-mini")
        .workspace_root(workspace.to_path_buf())
}

/// A runtime built without a retry policy retries with the default one.
#[tokio::test]
async fn a_runtime_built_without_a_policy_retries_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![bad_gateway(), openai::text("after one retry")]).unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let runtime = runtime_over(provider, dir.path()).build().unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("hello")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "after one retry");
    assert_eq!(server.requests().len(), 2);
}

/// `without_retries` uses the client as given: its first error ends the run.
#[tokio::test]
async fn a_runtime_built_without_retries_does_not_retry() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![bad_gateway(), openai::text("never asked for")]).unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let runtime = runtime_over(provider, dir.path())
        .without_retries()
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("hello")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "provider");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 1);
}

/// A stream that breaks before any output (a server error inside a 200) falls back
/// to one plain request, within the policy's attempts; the runtime adds no fallback
/// of its own on top.
#[tokio::test]
async fn a_stream_broken_before_output_falls_back_once_per_policy() {
    use oxydra::provider::RetryPolicy;
    use oxydra_test_support::SseEvent;
    let dir = tempfile::tempdir().unwrap();
    let broken = || {
        Reply::events(&[SseEvent::data(
            r#"{"error":{"message":"Internal error","type":"server_error"}}"#,
        )])
    };
    let server = MockServer::start(vec![
        broken(),
        bad_gateway(),
        bad_gateway(),
        broken(),
        openai::text("too late"),
    ])
    .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    let policy = RetryPolicy::default()
        .with_max_attempts(3)
        .with_base_delay(std::time::Duration::from_millis(1));
    let runtime = runtime_over(provider, dir.path())
        .retry_policy(policy)
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("hello")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "provider");
    let requests = server.requests();
    let streamed: Vec<bool> = requests
        .iter()
        .map(|r| r.body["stream"] == serde_json::json!(true))
        .collect();
    // One stream, then two plain requests: three attempts in all.
    assert_eq!(streamed, [true, false, false]);
}
