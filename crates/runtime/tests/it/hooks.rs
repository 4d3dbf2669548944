//! Hooks in a run: a stop before the model is asked, a request changed for the model
//! only, an output rewrite that is still scrubbed, and `on_event` seeing the run.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::{
    AfterToolDecision, BeforeToolDecision, CollectingEventSink, Hook, HookError,
    ModelRequestDecision, ModelRequestEdit, RuntimeError, ToolHookCall,
};
use oxydra_tools::ToolOutput;
use oxydra_types::{Message, MessageRole, RuntimeEvent, SessionId};
use tokio_util::sync::CancellationToken;

const PASSWORD: &str = "hunter2-very-secret";

/// Stops the run at its `stop_at`-th model request.
struct StopAt {
    stop_at: usize,
    asked: AtomicUsize,
}

#[async_trait]
impl Hook for StopAt {
    fn name(&self) -> &str {
        "quota"
    }

    async fn before_model_request(
        &self,
        _request: &mut ModelRequestEdit,
        _cancel: &CancellationToken,
    ) -> Result<ModelRequestDecision, HookError> {
        let asked = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        if asked >= self.stop_at {
            return Ok(ModelRequestDecision::Stop {
                reason: "the daily quota is used up".into(),
            });
        }
        Ok(ModelRequestDecision::Continue)
    }
}

#[tokio::test]
async fn a_stop_before_the_model_request_ends_the_run_before_the_provider_is_asked() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"hi"}"#),
        ScriptedTurn::text("never sent"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tool(EchoTool)
        .hook(StopAt {
            stop_at: 2,
            asked: AtomicUsize::new(0),
        })
        .build()
        .unwrap();
    let error = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap_err();
    assert!(
        matches!(error, RuntimeError::HookStopped { .. }),
        "{error:?}"
    );
    assert_eq!(error.kind(), "hook_stopped");
    assert!(error.to_string().contains("the daily quota is used up"));
    // The first request went out; the second was stopped.
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(provider.remaining(), 1);
    let events = events.events();
    assert!(events.iter().any(|event| matches!(
        event,
        RuntimeEvent::HookDecision { hook, decision, point, .. }
            if hook == "quota" && decision == "stop" && point == "before_model_request"
    )));
    assert!(matches!(
        events.last(),
        Some(RuntimeEvent::Error { kind, .. }) if kind == "hook_stopped"
    ));
}

/// Hides the `echo` tool and adds a note, for the model's eyes only.
struct Trim;

#[async_trait]
impl Hook for Trim {
    async fn before_model_request(
        &self,
        request: &mut ModelRequestEdit,
        _cancel: &CancellationToken,
    ) -> Result<ModelRequestDecision, HookError> {
        request.tools.retain(|tool| tool.name != "echo");
        request.messages.push(Message::user("note from a hook"));
        Ok(ModelRequestDecision::Continue)
    }
}

#[tokio::test]
async fn a_changed_request_reaches_the_model_but_not_the_session() {
    let provider = scripted(vec![ScriptedTurn::text("ok")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tool(EchoTool)
        .hook(Trim)
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("go").await.unwrap();
    let sent = &provider.requests()[0];
    assert!(sent.tools.iter().all(|tool| tool.name != "echo"));
    assert_eq!(
        sent.messages.last().map(|m| m.text().to_owned()),
        Some("note from a hook".to_owned())
    );
    let stored = runtime.session_messages(&session).await.unwrap();
    assert!(stored.iter().all(|m| m.text() != "note from a hook"));
}

/// Appends a secret to every output.
struct Leaky;

#[async_trait]
impl Hook for Leaky {
    async fn after_tool(
        &self,
        _call: &ToolHookCall,
        output: &ToolOutput,
        _cancel: &CancellationToken,
    ) -> Result<AfterToolDecision, HookError> {
        Ok(AfterToolDecision::Replace {
            content: format!("{} password={PASSWORD}", output.content),
        })
    }
}

#[tokio::test]
async fn a_secret_an_after_tool_hook_adds_is_still_scrubbed() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"hi"}"#),
        ScriptedTurn::text("done"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tool(EchoTool)
        .hook(Leaky)
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("go").await.unwrap();
    let results = tool_results(&provider.requests()[1]);
    assert_eq!(results.len(), 1);
    let (_, content) = &results[0];
    assert!(content.starts_with("echo: hi"), "{content}");
    assert!(!content.contains(PASSWORD), "{content}");
    assert!(content.contains("[REDACTED]"), "{content}");
    let stored = runtime.session_messages(&session).await.unwrap();
    let tool_message = stored.iter().find(|m| m.role == MessageRole::Tool).unwrap();
    assert!(!tool_message.text().contains(PASSWORD));
}

/// Denies everything and records every event it sees.
#[derive(Default)]
struct Auditor {
    seen: Arc<Mutex<Vec<RuntimeEvent>>>,
}

#[async_trait]
impl Hook for Auditor {
    fn name(&self) -> &str {
        "auditor"
    }

    async fn before_tool(
        &self,
        _call: &ToolHookCall,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolDecision, HookError> {
        Ok(BeforeToolDecision::Deny {
            reason: format!("audited, password={PASSWORD}"),
        })
    }

    fn on_event(&self, event: &RuntimeEvent) {
        self.seen.lock().unwrap().push(event.clone());
    }
}

#[tokio::test]
async fn on_event_sees_every_event_scrubbed_and_the_model_sees_the_denial() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "echo", r#"{"text":"hi"}"#),
        ScriptedTurn::text("done"),
    ]);
    let sink = Arc::new(CollectingEventSink::new());
    let auditor = Auditor::default();
    let seen = Arc::clone(&auditor.seen);
    let runtime = builder(provider.clone(), sink.clone())
        .tool(EchoTool)
        .hook(auditor)
        .build()
        .unwrap();
    runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap();
    let (_, content) = &tool_results(&provider.requests()[1])[0];
    assert!(
        content.starts_with("Tool execution failed: hook `auditor` denied `echo`: audited"),
        "{content}"
    );
    assert!(!content.contains(PASSWORD), "{content}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, sink.events());
    let json = serde_json::to_string(&seen).unwrap();
    assert!(!json.contains(PASSWORD), "{json}");
    assert!(
        seen.iter()
            .any(|event| matches!(event, RuntimeEvent::HookDecision { .. }))
    );
    assert!(matches!(seen.last(), Some(RuntimeEvent::Final { .. })));
}
