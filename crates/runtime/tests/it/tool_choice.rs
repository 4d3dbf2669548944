//! The tool choice of each turn: the runtime's default, a per-turn policy and a
//! per-run override reach the provider's request, and the strict OpenAI mock's wire.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::{OpenAiProvider, ProviderConfig, ScriptedTurn, ToolChoice};
use oxydra_runtime::{AgentRuntime, CollectingEventSink, FirstCall, ToolChoicePolicy, TurnInfo};
use oxydra_test_support::{MockServer, openai};
use oxydra_types::SessionId;

fn choices(provider: &oxydra_provider::ScriptedProvider) -> Vec<ToolChoice> {
    provider
        .requests()
        .into_iter()
        .map(|r| r.tool_choice)
        .collect()
}

#[tokio::test]
async fn the_default_is_auto_on_every_turn() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"a"}"#),
        ScriptedTurn::text("done"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    runtime.run("go").await.unwrap();
    assert_eq!(choices(&provider), [ToolChoice::Auto, ToolChoice::Auto]);
}

#[tokio::test]
async fn first_call_required_then_auto_per_turn() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"a"}"#),
        ScriptedTurn::tool_call("c2", "echo", r#"{"text":"b"}"#),
        ScriptedTurn::text("done"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .tool_choice(FirstCall::required_then_auto())
        .build()
        .unwrap();
    let outcome = runtime.run("go").await.unwrap();
    assert_eq!(outcome.turns, 3);
    assert_eq!(
        choices(&provider),
        [ToolChoice::Required, ToolChoice::Auto, ToolChoice::Auto]
    );
}

/// A policy of the library user's own: a named tool on the first turn, then none.
#[derive(Debug)]
struct ReadThenAnswer;

impl ToolChoicePolicy for ReadThenAnswer {
    fn choose(&self, turn: TurnInfo) -> ToolChoice {
        if turn.turn == 1 {
            ToolChoice::Tool("echo".into())
        } else {
            ToolChoice::None
        }
    }
}

#[tokio::test]
async fn a_run_overrides_the_runtime_and_a_custom_policy_sees_the_turn() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"a"}"#),
        ScriptedTurn::text("done"),
        ScriptedTurn::text("plain"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .tool_choice(ToolChoice::Required)
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        .prompt("go")
        .tool_choice(ReadThenAnswer)
        .await
        .unwrap();
    assert_eq!(
        choices(&provider),
        [ToolChoice::Tool("echo".into()), ToolChoice::None]
    );
    // The next run without options is back on the runtime's choice.
    runtime.run("again").await.unwrap();
    assert_eq!(choices(&provider)[2], ToolChoice::Required);
}

#[tokio::test]
async fn the_stream_form_takes_options_too() {
    let provider = scripted(vec![ScriptedTurn::text("plain")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let (_events, handle) = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .tool_choice(ToolChoice::None)
        .stream();
    handle.await.unwrap();
    assert_eq!(choices(&provider), [ToolChoice::None]);
}

#[tokio::test]
async fn the_choice_per_turn_goes_on_the_wire_of_the_strict_openai_mock() {
    let server = MockServer::builder()
        .replies(vec![
            openai::tool_calls(&[("call_1", "echo", r#"{"text":"hi"}"#)]),
            openai::text("It said hi."),
        ])
        .strict_openai()
        .start()
        .unwrap();
    let provider = Arc::new(OpenAiProvider::new(ProviderConfig::new(
        server.openai_url(),
        Some("k".into()),
    )));
    let runtime = AgentRuntime::builder()
        .provider(provider)
        .model("gpt-4o-mini")
        .tools(registry(vec![Arc::new(EchoTool)]))
        .tool_choice(FirstCall::required_then_auto())
        .workspace_root(std::env::temp_dir())
        .build()
        .unwrap();
    let outcome = runtime.run("Say hi through echo").await.unwrap();
    assert_eq!(outcome.final_text, "It said hi.");
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"], "required");
    assert_eq!(bodies[1]["tool_choice"], "auto");
}
