use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use futures::StreamExt;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{CollectingEventSink, TurnState};
use oxydra_types::{
    FinishReason, MessageRole, RuntimeEvent, RuntimeProgressKind, SessionId, StreamItem, Usage,
};
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_call_missing_a_required_field_is_corrected_by_the_model() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", "{}"),
        ScriptedTurn::tool_call("c2", "echo", r#"{"text":"hi"}"#),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let outcome = runtime.session(&session).prompt("say hi").await.unwrap();
    assert_eq!(outcome.final_text, "done");
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.usage, Usage::new(30, 15, 0));

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let second = tool_results(&requests[1]);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].0, "c1");
    assert!(
        second[0].1.starts_with("Tool execution failed:"),
        "{}",
        second[0].1
    );
    assert!(
        second[0].1.contains("text"),
        "the error names the missing field: {}",
        second[0].1
    );
    let third = tool_results(&requests[2]);
    assert_eq!(
        third.last().unwrap(),
        &("c2".to_owned(), "echo: hi".to_owned())
    );
    // The tools and the system prompt travel with every request.
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(requests[0].model, "test-model");
    assert!(matches!(
        events
            .events()
            .iter()
            .filter(|e| matches!(e, RuntimeEvent::ToolFailed { .. }))
            .count(),
        1
    ));
}

#[tokio::test]
async fn read_only_calls_run_together_and_results_keep_request_order() {
    let flight = Arc::new(Flight::default());
    let read = Arc::new(ReadTool {
        flight: flight.clone(),
        barrier: Arc::new(Barrier::new(2)),
        b_done: Arc::new(Notify::new()),
    });
    let write = Arc::new(WriteTool {
        flight: flight.clone(),
    });
    let provider = scripted(vec![
        ScriptedTurn::tool_calls(vec![
            call("r1", "read", r#"{"key":"a"}"#),
            call("r2", "read", r#"{"key":"b"}"#),
            call("w1", "write", r#"{"key":"x"}"#),
            call("r3", "read", r#"{"key":"c"}"#),
        ]),
        ScriptedTurn::text("all done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![read, write]))
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap();
    let requests = provider.requests();
    let results = tool_results(&requests[1]);
    assert_eq!(
        results,
        vec![
            ("r1".to_owned(), "value of a".to_owned()),
            ("r2".to_owned(), "value of b".to_owned()),
            ("w1".to_owned(), "wrote x".to_owned()),
            ("r3".to_owned(), "value of c".to_owned()),
        ]
    );
    assert_eq!(flight.max_in_flight.load(Ordering::SeqCst), 2);
    let log = flight.log.lock().unwrap().clone();
    // b finished before a (real timing), the write came after both, c after the write.
    let position = |entry: &str| log.iter().position(|l| l == entry).unwrap();
    assert!(position("end b") < position("end a"));
    assert!(position("end a") < position("write x"));
    assert!(position("write x") < position("start c"));
    // Every call completes exactly once (their order is the executor's business).
    let mut completed: Vec<String> = events
        .events()
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ToolCompleted { call_id, .. } => Some(call_id.to_string()),
            _ => None,
        })
        .collect();
    completed.sort();
    assert_eq!(completed, vec!["r1", "r2", "r3", "w1"]);
}

#[tokio::test]
async fn events_arrive_in_the_documented_order() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"x"}"#),
        ScriptedTurn::Stream(vec![
            StreamItem::Text("do".into()),
            StreamItem::Text("ne".into()),
            StreamItem::Usage(Usage::new(7, 2, 0)),
            StreamItem::Finish(FinishReason::Stop),
        ]),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let outcome = runtime.session(&session).prompt("hi").await.unwrap();
    assert_eq!(outcome.final_text, "done");
    let names: Vec<String> = events
        .events()
        .iter()
        .map(|event| match event {
            RuntimeEvent::Progress(p) => format!("progress:{}:{}", p.kind.as_str(), p.message),
            RuntimeEvent::TextDelta { text } => format!("text:{text}"),
            RuntimeEvent::ReasoningDelta { text } => format!("reasoning:{text}"),
            RuntimeEvent::ToolStarted { name, .. } => format!("started:{name}"),
            RuntimeEvent::ToolCompleted { name, .. } => format!("completed:{name}"),
            RuntimeEvent::ToolFailed { name, .. } => format!("failed:{name}"),
            RuntimeEvent::ApprovalRequested { name, .. } => format!("requested:{name}"),
            RuntimeEvent::ApprovalDecided { name, .. } => format!("decided:{name}"),
            RuntimeEvent::TurnCompleted { turn, usage } => {
                format!("turn:{turn}:{}", usage.input_tokens)
            }
            RuntimeEvent::Final { text, turns, .. } => format!("final:{text}:{turns}"),
            RuntimeEvent::SubAgent { agent, .. } => format!("sub_agent:{agent}"),
            RuntimeEvent::HookDecision { hook, decision, .. } => format!("hook:{hook}:{decision}"),
            RuntimeEvent::Error { kind, .. } => format!("error:{kind}"),
            other => format!("unknown:{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "progress:provider_call:[1/8] Calling the model",
            "progress:tool_execution:[1/8] Executing tools: echo",
            "started:echo",
            "completed:echo",
            "turn:1:10",
            "progress:provider_call:[2/8] Calling the model",
            "text:do",
            "text:ne",
            "turn:2:7",
            "final:done:2",
        ]
    );
}

#[tokio::test]
async fn a_second_run_continues_the_session_in_process() {
    let provider = scripted(vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .system_prompt("be brief")
        .build()
        .unwrap();
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    runtime
        .session(&session)
        .prompt("first")
        .cancel(&cancel)
        .await
        .unwrap();
    runtime
        .session(&session)
        .prompt("second")
        .cancel(&cancel)
        .await
        .unwrap();
    let second = &provider.requests()[1];
    let texts: Vec<(MessageRole, &str)> =
        second.messages.iter().map(|m| (m.role, m.text())).collect();
    assert_eq!(
        texts,
        vec![
            (MessageRole::System, "be brief"),
            (MessageRole::User, "first"),
            (MessageRole::Assistant, "one"),
            (MessageRole::User, "second"),
        ]
    );
    // Another session starts empty.
    let other = scripted(vec![ScriptedTurn::text("x")]);
    let runtime2 = builder(other.clone(), Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    runtime2
        .session(&SessionId::generate())
        .prompt("fresh")
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(other.requests()[0].messages.len(), 1);
    runtime.forget_session(&session);
    assert!(runtime.session_messages(&session).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_stream_form_yields_events_and_the_outcome() {
    let provider = scripted(vec![ScriptedTurn::text("streamed answer")]);
    let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let (stream, handle) = runtime
        .session(&SessionId::generate())
        .prompt("hi")
        .stream();
    let events: Vec<RuntimeEvent> = stream.collect().await;
    let outcome = handle.await.unwrap();
    assert_eq!(outcome.final_text, "streamed answer");
    assert!(
        matches!(events.first(), Some(RuntimeEvent::Progress(p)) if p.kind == RuntimeProgressKind::ProviderCall)
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RuntimeEvent::TextDelta { text } if text == "streamed answer"))
    );
    assert!(
        matches!(events.last(), Some(RuntimeEvent::Final { text, .. }) if text == "streamed answer")
    );
}

#[tokio::test]
async fn a_provider_error_ends_the_session_with_an_error_event() {
    let provider = scripted(vec![ScriptedTurn::Error(
        oxydra_provider::ProviderError::Auth {
            status: 401,
            message: "bad key".into(),
        },
    )]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone()).build().unwrap();
    let session = SessionId::generate();
    let error = runtime.session(&session).prompt("hi").await.unwrap_err();
    assert_eq!(error.kind(), "provider");
    // An auth failure is not retried through complete().
    assert_eq!(provider.requests().len(), 1);
    assert!(
        matches!(events.events().last(), Some(RuntimeEvent::Error { kind, .. }) if kind == "provider")
    );
    // The user message stays stored.
    assert_eq!(runtime.session_messages(&session).await.unwrap().len(), 1);
}

/// The runtime's provider is wrapped in a `ReliableProvider` by default, whose
/// fallback answers a stream that broke before any output.
#[tokio::test]
async fn a_stream_that_fails_before_output_falls_back_to_complete() {
    let provider = scripted(vec![
        ScriptedTurn::Error(oxydra_provider::ProviderError::Transport {
            message: "connection reset".into(),
        }),
        ScriptedTurn::text("from complete"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("hi")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "from complete");
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn without_retries_a_stream_that_fails_before_output_ends_the_run() {
    let provider = scripted(vec![
        ScriptedTurn::Error(oxydra_provider::ProviderError::Transport {
            message: "connection reset".into(),
        }),
        ScriptedTurn::text("must not be asked for"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .without_retries()
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("hi")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "provider");
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(provider.remaining(), 1);
}

#[test]
fn turn_state_is_public() {
    assert!(TurnState::Yielding.is_terminal());
}

#[tokio::test]
async fn a_runtime_without_provider_or_model_is_a_config_error() {
    let error = oxydra_runtime::AgentRuntime::builder()
        .model("m")
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), "config");
    let error = oxydra_runtime::AgentRuntime::builder()
        .provider(scripted(vec![]))
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("model"));
    let error = oxydra_runtime::AgentRuntime::builder()
        .provider(scripted(vec![]))
        .model("m")
        .limits({
            let mut custom = limits();
            custom.max_turns = 0;
            custom
        })
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("max_turns"));
}

#[tokio::test]
async fn a_tool_call_cut_by_the_output_limit_is_not_run_and_the_model_is_told() {
    use oxydra_types::{CallId, ToolCallDelta};
    let delta = |index: u32, id: &str, arguments: &str| {
        StreamItem::ToolCallDelta(ToolCallDelta {
            index,
            id: Some(CallId::from(id)),
            name: Some("echo".into()),
            arguments: arguments.into(),
        })
    };
    let provider = scripted(vec![
        ScriptedTurn::Stream(vec![
            delta(0, "c1", r#"{"text":"whole"}"#),
            delta(1, "c2", ""),
            StreamItem::Usage(Usage::new(10, 5, 0)),
            StreamItem::Finish(FinishReason::Length),
        ]),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EchoTool)]))
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    let results = tool_results(&provider.requests()[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "c1");
    assert!(
        !results[0].1.starts_with("Tool execution failed"),
        "{results:?}"
    );
    assert_eq!(results[1].0, "c2");
    assert!(
        results[1].1.starts_with("Tool execution failed:")
            && results[1].1.contains("output-token limit"),
        "{results:?}"
    );
    let failed: Vec<_> = events
        .events()
        .into_iter()
        .filter(|event| matches!(event, RuntimeEvent::ToolFailed { call_id, .. } if call_id.as_str() == "c2"))
        .collect();
    assert_eq!(failed.len(), 1);
}
