//! What a run records about its session (`SessionMeta`), and a runtime that keeps a
//! stored session's recorded system prompt.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SessionMeta, SqliteMemory};
use oxydra_provider::{ProviderRequest, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_types::{MessageRole, SessionId};
use tokio_util::sync::CancellationToken;

fn runtime(
    memory: &Arc<SqliteMemory>,
    provider: &Arc<ScriptedProvider>,
    prompt: &str,
    keep: bool,
) -> AgentRuntime {
    builder(Arc::clone(provider), Arc::new(CollectingEventSink::new()))
        .memory(Arc::clone(memory) as Arc<dyn Memory>)
        .system_prompt(prompt)
        .keep_session_system_prompt(keep)
        .build()
        .unwrap()
}

fn system_prompts(request: &ProviderRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::System)
        .map(|m| m.text().to_owned())
        .collect()
}

#[tokio::test]
async fn a_continued_session_keeps_its_agents_prompt_only_when_the_runtime_asks() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let provider = scripted(vec![
        ScriptedTurn::text("one"),
        ScriptedTurn::text("two"),
        ScriptedTurn::text("three"),
        ScriptedTurn::text("four"),
    ]);

    // The agent's run records its model, prompt and name.
    let agent = builder(Arc::clone(&provider), Arc::new(CollectingEventSink::new()))
        .memory(Arc::clone(&memory) as Arc<dyn Memory>)
        .system_prompt("You count quokkas.")
        .agent_name("census")
        .build()
        .unwrap();
    assert_eq!(memory.session_meta(&session).await.unwrap(), None);
    agent
        .session(&session)
        .prompt("first")
        .cancel(&cancel)
        .await
        .unwrap();
    let recorded = SessionMeta {
        model: "test-model".into(),
        system_prompt: Some("You count quokkas.".into()),
        agent: Some("census".into()),
        workspace: std::env::temp_dir().to_str().map(str::to_owned),
        replay_of: None,
    };
    assert_eq!(
        memory.session_meta(&session).await.unwrap(),
        Some(recorded.clone())
    );

    // A runtime keeping stored prompts sends the agent's, and keeps the record.
    let keeper = runtime(&memory, &provider, "You are a CLI.", true);
    keeper
        .session(&session)
        .prompt("second")
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(
        system_prompts(&provider.requests()[1]),
        ["You count quokkas."]
    );
    assert_eq!(memory.session_meta(&session).await.unwrap(), Some(recorded));
    // A new session of that runtime gets its own prompt, recorded without an agent.
    let fresh = SessionId::generate();
    keeper
        .session(&fresh)
        .prompt("hello")
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(system_prompts(&provider.requests()[2]), ["You are a CLI."]);
    assert_eq!(
        memory.session_meta(&fresh).await.unwrap().unwrap().agent,
        None
    );

    // A runtime that does not keep them sends its own, and the record follows.
    let other = runtime(&memory, &provider, "Answer in one word.", false);
    other
        .session(&session)
        .prompt("third")
        .cancel(&cancel)
        .await
        .unwrap();
    assert_eq!(
        system_prompts(&provider.requests()[3]),
        ["Answer in one word."]
    );
    let now = memory.session_meta(&session).await.unwrap().unwrap();
    assert_eq!(now.system_prompt.as_deref(), Some("Answer in one word."));
    assert_eq!(now.agent, None);
}

#[tokio::test]
async fn a_session_stored_without_a_meta_continues_with_the_runtimes_prompt() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    // Stored as an older Oxydra left it: messages, no meta.
    memory
        .append(&session, &oxydra_types::Message::user("old"))
        .await
        .unwrap();
    memory
        .append(&session, &oxydra_types::Message::assistant("reply"))
        .await
        .unwrap();
    let provider = scripted(vec![ScriptedTurn::text("new")]);
    let keeper = runtime(&memory, &provider, "You are a CLI.", true);
    keeper.session(&session).prompt("again").await.unwrap();
    assert_eq!(system_prompts(&provider.requests()[0]), ["You are a CLI."]);
    assert_eq!(
        memory
            .session_meta(&session)
            .await
            .unwrap()
            .and_then(|m| m.system_prompt),
        Some("You are a CLI.".to_owned())
    );
}

#[tokio::test]
async fn a_kept_meta_without_a_prompt_sends_none() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    let cancel = CancellationToken::new();
    let provider = scripted(vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")]);
    let bare = builder(Arc::clone(&provider), Arc::new(CollectingEventSink::new()))
        .memory(Arc::clone(&memory) as Arc<dyn Memory>)
        .agent_name("bare")
        .build()
        .unwrap();
    bare.session(&session)
        .prompt("first")
        .cancel(&cancel)
        .await
        .unwrap();
    let keeper = runtime(&memory, &provider, "You are a CLI.", true);
    keeper
        .session(&session)
        .prompt("second")
        .cancel(&cancel)
        .await
        .unwrap();
    assert!(system_prompts(&provider.requests()[1]).is_empty());
}
