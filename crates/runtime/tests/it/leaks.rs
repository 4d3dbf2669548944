//! What leaves the runtime is scrubbed, and malformed calls do not break the run.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::CollectingEventSink;
use oxydra_types::{MessageRole, RuntimeEvent, SessionId};

const PASSWORD: &str = "hunter2-very-secret";

#[tokio::test]
async fn a_secret_in_the_prompt_reaches_neither_the_provider_nor_the_history() {
    let provider = scripted(vec![ScriptedTurn::text("ok")]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events).build().unwrap();
    let session = SessionId::generate();
    runtime
        .session(&session)
        .prompt(format!("log in with password={PASSWORD}"))
        .await
        .unwrap();
    let sent = format!("{:?}", provider.requests()[0].messages);
    assert!(!sent.contains(PASSWORD), "{sent}");
    assert!(sent.contains("password=[REDACTED]"), "{sent}");
    let stored = format!("{:?}", runtime.session_messages(&session).await.unwrap());
    assert!(!stored.contains(PASSWORD), "{stored}");
}

#[tokio::test]
async fn a_failing_tool_call_reaches_every_sink_scrubbed() {
    // An unknown tool whose name and arguments hold a secret: the failure event quotes
    // the name.
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", &format!("password={PASSWORD}"), "{}"),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider, events.clone()).build().unwrap();
    let (mut stream, handle) = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .stream();
    let mut streamed = Vec::new();
    while let Some(event) = stream.recv().await {
        streamed.push(event);
    }
    handle.await.unwrap();
    assert!(
        streamed
            .iter()
            .any(|event| matches!(event, RuntimeEvent::ToolFailed { .. }))
    );
    for list in [&streamed, &events.events()] {
        let json = serde_json::to_string(list).unwrap();
        assert!(!json.contains(PASSWORD), "{json}");
        assert!(json.contains("[REDACTED]"), "{json}");
    }
}

#[tokio::test]
async fn an_empty_tool_name_gets_an_error_result_and_the_run_goes_on() {
    let provider = scripted(vec![
        ScriptedTurn::tool_calls(vec![call("c1", "", "{}"), call("c2", "config", "{}")]),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events)
        .tools(registry(vec![Arc::new(SecretTool)]))
        .build()
        .unwrap();
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("go")
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");
    let results = tool_results(&provider.requests()[1]);
    assert_eq!(results[0].0, "c1");
    assert!(
        results[0].1.starts_with("Tool execution failed:"),
        "{results:?}"
    );
    assert_eq!(results[1].0, "c2");
    assert!(results[1].1.contains("eu-west-1"), "{results:?}");
}

#[tokio::test]
async fn repeated_call_ids_are_renamed_consistently() {
    let provider = scripted(vec![
        ScriptedTurn::tool_calls(vec![
            call("dup", "config", r#"{"n":1}"#),
            call("dup", "config", r#"{"n":2}"#),
            call("", "config", r#"{"n":3}"#),
        ]),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events)
        .tools(registry(vec![Arc::new(SecretTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("go").await.unwrap();
    let request = &provider.requests()[1];
    let calls: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.to_string()))
        .collect();
    let results: Vec<String> = tool_results(request)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(&calls[..2], ["dup", "dup_2"]);
    assert!(!calls[2].is_empty());
    assert_eq!(results, calls);
    let stored = runtime.session_messages(&session).await.unwrap();
    assert_no_orphans(&stored);
}

/// A tool that prints a key the program holds, encoded as a command would.
struct EncodingTool;

const HELD_KEY: &str = "held-Zt9wQ3mR7vK2xLp8Nd4Hs6Jf";

#[async_trait::async_trait]
impl oxydra_tools::Tool for EncodingTool {
    fn schema(&self) -> oxydra_types::ToolSchema {
        oxydra_types::ToolSchema::new("dump", "Prints bytes", serde_json::json!({"type":"object"}))
    }
    fn safety_tier(&self) -> oxydra_types::SafetyTier {
        oxydra_types::SafetyTier::ReadOnly
    }
    async fn execute(
        &self,
        _args: serde_json::Value,
        _ctx: &oxydra_tools::ToolContext,
    ) -> Result<oxydra_tools::ToolOutput, oxydra_tools::ToolError> {
        let decimal: Vec<String> = HELD_KEY.bytes().map(|b| b.to_string()).collect();
        let spaced: Vec<String> = HELD_KEY.chars().map(String::from).collect();
        Ok(oxydra_tools::ToolOutput::text(format!(
            "bytes: {}\nspaced: {}\n",
            decimal.join(" "),
            spaced.join(" ")
        )))
    }
}

#[tokio::test]
async fn a_known_secret_printed_encoded_reaches_neither_the_model_nor_memory_nor_events() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "dump", "{}"),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(EncodingTool)]))
        .known_secret("HELD_KEY", HELD_KEY)
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("go").await.unwrap();
    let decimal: Vec<String> = HELD_KEY.bytes().map(|b| b.to_string()).collect();
    let tail = decimal[decimal.len() - 6..].join(" ");
    let sent = format!("{:?}", provider.requests()[1].messages);
    let stored = format!("{:?}", runtime.session_messages(&session).await.unwrap());
    let emitted = serde_json::to_string(&events.events()).unwrap();
    for (label, text) in [
        ("request", &sent),
        ("memory", &stored),
        ("events", &emitted),
    ] {
        assert!(!text.contains(&tail), "{label}: {text}");
        assert!(!text.contains("H s 6 J f"), "{label}: {text}");
    }
    assert!(sent.contains("bytes: [REDACTED]"), "{sent}");
}

#[test]
fn a_known_secret_too_short_to_search_is_refused_without_its_value() {
    let error = builder(scripted(vec![]), Arc::new(CollectingEventSink::new()))
        .known_secret("PIN", "12345")
        .build()
        .err()
        .unwrap();
    let text = error.to_string();
    assert!(text.contains("PIN") && !text.contains("12345"), "{text}");
}

/// A tool that reports what it was given: it holds the secret's value for the call.
struct Deployer(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl oxydra_tools::Tool for Deployer {
    fn schema(&self) -> oxydra_types::ToolSchema {
        oxydra_types::ToolSchema::new(
            "deploy",
            "Deploys with a token",
            serde_json::json!({"type":"object","properties":{"token":{"type":"string"}},"required":["token"]}),
        )
    }
    fn safety_tier(&self) -> oxydra_types::SafetyTier {
        oxydra_types::SafetyTier::ReadOnly
    }
    async fn execute(
        &self,
        args: serde_json::Value,
        _ctx: &oxydra_tools::ToolContext,
    ) -> Result<oxydra_tools::ToolOutput, oxydra_tools::ToolError> {
        let token = args["token"].as_str().unwrap_or_default().to_owned();
        self.0.lock().unwrap().push(token.clone());
        // A careless tool echoes what it got.
        Ok(oxydra_tools::ToolOutput::text(format!(
            "deployed with {token}"
        )))
    }
}

const HANDLED: &str = "dpl-Qm7Zt2Rk9Wv4Xy8Lp3Nd6Hs";

#[tokio::test]
async fn a_secret_handle_is_put_in_inside_the_call_and_nowhere_else() {
    use oxydra_executor::{SecretHandle, SecretHandles};
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "deploy", r#"{"token":"{{secret:DEPLOY}}"}"#),
        ScriptedTurn::tool_call("c2", "deploy", r#"{"token":"{{secret:OTHER}}"}"#),
        ScriptedTurn::text("done"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let tool = Arc::new(Deployer(std::sync::Mutex::new(Vec::new())));
    let handles = SecretHandles::default()
        .with(
            "DEPLOY",
            SecretHandle::new(HANDLED, ["deploy"], Vec::<String>::new()),
        )
        .with(
            "OTHER",
            SecretHandle::new(
                "other-Value-0123456789",
                ["shell_exec"],
                Vec::<String>::new(),
            ),
        );
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![tool.clone()]))
        .secret_handles(handles)
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime.session(&session).prompt("deploy").await.unwrap();
    // The tool got the value once; the refused handle never reached it.
    assert_eq!(*tool.0.lock().unwrap(), [HANDLED.to_owned()]);
    let sent = format!("{:?}", provider.requests());
    let stored = format!("{:?}", runtime.session_messages(&session).await.unwrap());
    let emitted = serde_json::to_string(&events.events()).unwrap();
    for (label, text) in [
        ("requests", &sent),
        ("memory", &stored),
        ("events", &emitted),
    ] {
        assert!(!text.contains(HANDLED), "{label}: {text}");
        assert!(!text.contains("other-Value"), "{label}: {text}");
    }
    // The model saw its own handle, the scrubbed echo and why the second was refused.
    let last = format!("{:?}", provider.requests()[2].messages);
    assert!(last.contains("{{secret:DEPLOY}}"), "{last}");
    assert!(last.contains("deployed with [REDACTED]"), "{last}");
    assert!(last.contains("may be used with: shell_exec"), "{last}");
}
