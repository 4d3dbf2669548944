//! A tool's parts (images, documents) travel in its result message to the provider
//! and the database, their metadata scrubbed and their bytes untouched.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::CollectingEventSink;
use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
use oxydra_types::{ContentPart, MessageRole, SafetyTier, SessionId, ToolSchema};
use serde_json::{Value, json};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0";

/// `snap`: an image, a document whose name holds a secret and an image URL holding it.
struct SnapTool;

#[async_trait]
impl Tool for SnapTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new("snap", "Takes a screenshot", json!({"type":"object"}))
    }
    fn safety_tier(&self) -> SafetyTier {
        SafetyTier::ReadOnly
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("three attachments").with_parts(vec![
            ContentPart::image("image/png", PNG),
            ContentPart::pdf(b"%PDF-1.7", Some(format!("api_key={SECRET}.pdf"))),
            ContentPart::image_url(format!("https://example.com/a.png?token={SECRET}")),
        ]))
    }
}

#[tokio::test]
async fn parts_reach_the_provider_and_the_history_scrubbed_with_their_bytes_intact() {
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "snap", "{}"),
        ScriptedTurn::text("a screenshot"),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .tools(registry(vec![Arc::new(SnapTool)]))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let outcome = runtime.session(&session).prompt("look").await.unwrap();
    assert_eq!(outcome.final_text, "a screenshot");

    let sent = provider.requests()[1].clone();
    let result = sent
        .messages
        .iter()
        .find(|message| message.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(result.text(), "three attachments");
    assert_eq!(result.parts.len(), 3);
    assert_eq!(result.parts[0], ContentPart::image("image/png", PNG));
    assert_eq!(result.parts[1].bytes().unwrap(), b"%PDF-1.7");
    let stored = runtime.session_messages(&session).await.unwrap();
    let stored_result = stored
        .iter()
        .find(|message| message.role == MessageRole::Tool)
        .unwrap();
    assert_eq!(stored_result, result);
    for text in [
        serde_json::to_string(&sent.messages).unwrap(),
        serde_json::to_string(&stored).unwrap(),
        serde_json::to_string(&events.events()).unwrap(),
    ] {
        assert!(!text.contains(SECRET), "{text}");
    }
    assert!(
        matches!(&result.parts[2], ContentPart::ImageUrl { url } if url.starts_with("https://example.com/a.png")),
        "{:?}",
        result.parts[2]
    );
}
