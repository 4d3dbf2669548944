//! The run request's tests: its own sink, tool choice, typed answer and cancel token
//! apply to that run only; no prompt resumes; a stream takes them too.

use std::borrow::Cow;
use std::time::Duration;

use futures::StreamExt;
use oxydra_provider::{ScriptedProvider, ScriptedTurn, ToolChoice};
use oxydra_types::{Message, MessageRole};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::json;

use super::*;
use crate::events::CollectingEventSink;
use crate::structured_output::FINAL_ANSWER_TOOL;

fn scripted(turns: Vec<ScriptedTurn>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(turns))
}

fn runtime(provider: &Arc<ScriptedProvider>, sink: &Arc<CollectingEventSink>) -> AgentRuntime {
    AgentRuntime::builder()
        .provider(provider.clone())
        .model("test-model")
        .event_sink(sink.clone())
        .build()
        .unwrap()
}

fn is_final(event: Option<&RuntimeEvent>) -> bool {
    matches!(event, Some(RuntimeEvent::Final { .. }))
}

#[tokio::test]
async fn the_requests_sink_gets_this_runs_events_and_no_other_runs() {
    let provider = scripted(vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")]);
    let runtime_sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &runtime_sink);
    let run_sink = Arc::new(CollectingEventSink::new());
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("first")
        .events(run_sink.clone())
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "one");
    let seen = run_sink.take();
    assert!(is_final(seen.last()), "{seen:?}");
    assert_eq!(runtime_sink.take(), seen);
    // A request without a sink of its own reaches only the runtime's.
    runtime
        .session(&SessionId::generate())
        .prompt("second")
        .await
        .unwrap();
    assert!(run_sink.events().is_empty());
    assert!(is_final(runtime_sink.events().last()));
}

#[tokio::test]
async fn the_requests_tool_choice_replaces_the_runtimes_for_that_run_only() {
    let provider = scripted(vec![ScriptedTurn::text("a"), ScriptedTurn::text("b")]);
    let runtime = AgentRuntime::builder()
        .provider(provider.clone())
        .model("test-model")
        .tool_choice(ToolChoice::Required)
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .session(&session)
        .prompt("q1")
        .tool_choice(ToolChoice::None)
        .await
        .unwrap();
    runtime.session(&session).prompt("q2").await.unwrap();
    let choices: Vec<ToolChoice> = provider
        .requests()
        .into_iter()
        .map(|request| request.tool_choice)
        .collect();
    assert_eq!(choices, [ToolChoice::None, ToolChoice::Required]);
}

/// A type whose schema takes any object but that deserializes only a small `n`:
/// an answer can pass the schema and still not be a `Strict`.
#[derive(Debug, Deserialize, PartialEq)]
struct Strict {
    n: u8,
}

impl JsonSchema for Strict {
    fn schema_name() -> Cow<'static, str> {
        "Strict".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
}

#[tokio::test]
async fn a_typed_answer_that_does_not_deserialize_goes_back_to_the_model() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", FINAL_ANSWER_TOOL, r#"{"n":300}"#),
        ScriptedTurn::tool_call("c2", FINAL_ANSWER_TOOL, r#"{"n":7}"#),
    ]);
    let sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &sink);
    let (value, outcome) = runtime
        .session(&SessionId::generate())
        .prompt("n?")
        .output::<Strict>()
        .await
        .unwrap()
        .finished()
        .unwrap();
    assert_eq!(value, Strict { n: 7 });
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.output, Some(json!({"n": 7})));
    let requests = provider.requests();
    let failure = requests[1].messages.last().unwrap();
    assert_eq!(failure.role, MessageRole::Tool);
    assert!(
        failure.text().contains("does not fit"),
        "{}",
        failure.text()
    );
}

/// A type whose schema is not a JSON Schema.
#[derive(Debug, Deserialize)]
struct Broken;

impl JsonSchema for Broken {
    fn schema_name() -> Cow<'static, str> {
        "Broken".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "no-such-type"})
    }
}

#[tokio::test]
async fn a_typed_request_whose_schema_does_not_compile_fails_before_the_run() {
    let provider = scripted(vec![ScriptedTurn::text("unused")]);
    let sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &sink);
    let error = runtime
        .session(&SessionId::generate())
        .prompt("q")
        .output::<Broken>()
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "config", "{error}");
    assert!(provider.requests().is_empty());
    assert!(sink.events().is_empty());
}

#[tokio::test]
async fn the_requests_cancel_token_cancels_the_run_in_flight() {
    let provider = scripted(vec![ScriptedTurn::HangAfter(Vec::new())]);
    let sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &sink);
    let cancel = CancellationToken::new();
    let run = tokio::spawn(
        runtime
            .session(&SessionId::generate())
            .prompt("wait")
            .cancel(&cancel)
            .into_future(),
    );
    // The provider was called and hangs until the token fires.
    let called = async {
        while provider.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(1), called)
        .await
        .unwrap();
    assert!(!run.is_finished());
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(result, Err(RuntimeError::Cancelled)), "{result:?}");
    assert!(matches!(
        sink.events().last(),
        Some(RuntimeEvent::Error { kind, .. }) if kind == "cancelled"
    ));
}

#[tokio::test]
async fn a_request_without_a_prompt_resumes_the_stored_conversation() {
    let provider = scripted(vec![ScriptedTurn::text("4")]);
    let sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &sink);
    let session = SessionId::generate();
    runtime
        .append_messages(&session, vec![Message::user("2 + 2?")])
        .await
        .unwrap();
    let outcome = runtime.session(&session).await.unwrap();
    assert_eq!(outcome.final_text, "4");
    assert_eq!(outcome.turns, 1);
    // The model saw the stored question and no new message.
    let sent = &provider.requests()[0].messages;
    let users: Vec<&Message> = sent
        .iter()
        .filter(|message| message.role == MessageRole::User)
        .collect();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].text(), "2 + 2?");
    // Resuming a conversation that ends with the answer returns it without a call.
    let again = runtime.session(&session).await.unwrap();
    assert_eq!(again.final_text, "4");
    assert_eq!(again.turns, 0);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_streamed_request_takes_its_sink_and_schema_too() {
    let provider = scripted(vec![ScriptedTurn::tool_call(
        "c1",
        FINAL_ANSWER_TOOL,
        r#"{"value":["a","b"]}"#,
    )]);
    let sink = Arc::new(CollectingEventSink::new());
    let runtime = runtime(&provider, &sink);
    let run_sink = Arc::new(CollectingEventSink::new());
    let schema = OutputSchema::new(json!({"type": "array", "items": {"type": "string"}})).unwrap();
    let (stream, handle) = runtime
        .session(&SessionId::generate())
        .prompt("two words")
        .events(run_sink.clone())
        .structured(schema)
        .stream();
    let streamed: Vec<RuntimeEvent> = stream.collect().await;
    let outcome = handle.await.unwrap();
    assert_eq!(outcome.output, Some(json!(["a", "b"])));
    assert!(is_final(streamed.last()), "{streamed:?}");
    assert_eq!(run_sink.events(), streamed);
    assert_eq!(sink.events(), streamed);
}
