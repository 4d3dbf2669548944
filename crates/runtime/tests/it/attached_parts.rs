//! Parts attached to a run's prompt (`RunRequest::attach` / `parts`): the provider
//! gets them on the user's message and memory stores them with it.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::CollectingEventSink;
use oxydra_types::{ContentPart, MessageRole, SessionId};

fn png() -> ContentPart {
    ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
}

fn pdf() -> ContentPart {
    ContentPart::pdf(b"%PDF-1.7\n%%EOF", Some("report.pdf".to_owned()))
}

#[tokio::test]
async fn attached_parts_reach_the_provider_and_memory_on_the_user_message() {
    let dir = tempfile::tempdir().unwrap();
    let memory =
        Arc::new(SqliteMemory::open(dir.path().join("o.db"), SqliteConfig::default()).unwrap());
    let provider = scripted(vec![ScriptedTurn::text("a cat"), ScriptedTurn::text("ok")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .session(&session)
        .prompt("what is this?")
        .attach(png())
        .parts(vec![pdf()])
        .await
        .unwrap();
    let sent = &provider.requests()[0].messages;
    let user = sent
        .iter()
        .find(|message| message.role == MessageRole::User)
        .unwrap();
    assert_eq!(user.text(), "what is this?");
    assert_eq!(user.parts, vec![png(), pdf()]);
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored[0].message.role, MessageRole::User);
    assert_eq!(stored[0].message.parts, vec![png(), pdf()]);
    // The next run's prompt has none; the first message keeps its own in the history.
    runtime.session(&session).prompt("thanks").await.unwrap();
    let second = &provider.requests()[1].messages;
    let users: Vec<usize> = second
        .iter()
        .filter(|message| message.role == MessageRole::User)
        .map(|message| message.parts.len())
        .collect();
    assert_eq!(users, [2, 0]);
}

#[tokio::test]
async fn parts_without_a_prompt_are_refused_before_anything_runs() {
    let provider = scripted(vec![ScriptedTurn::text("unused")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let error = runtime.session(&session).attach(png()).await.unwrap_err();
    assert_eq!(error.kind(), "config", "{error}");
    assert!(error.to_string().contains("prompt"), "{error}");
    assert!(provider.requests().is_empty());
    assert!(runtime.session_messages(&session).await.unwrap().is_empty());
}
