use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::SearchScope;
use oxydra_memory::{Memory, MemoryRetrieval, SqliteConfig, SqliteMemory};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::testing::RETRIEVAL_HEADER;
use oxydra_runtime::{CollectingEventSink, RetrievalScope, testing};
use oxydra_types::{Message, MessageRole, SessionId};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_restored_session_continues_from_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oxydra.db");
    let session = SessionId::generate();
    {
        let memory = Arc::new(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
        let provider = scripted(vec![
            ScriptedTurn::tool_call("c1", "echo", r#"{"text":"remember me"}"#),
            ScriptedTurn::text("one"),
        ]);
        let runtime = builder(provider, Arc::new(CollectingEventSink::new()))
            .tools(registry(vec![Arc::new(EchoTool)]))
            .memory(memory)
            .build()
            .unwrap();
        runtime.session(&session).prompt("first").await.unwrap();
    }
    let memory = Arc::new(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
    let provider = scripted(vec![ScriptedTurn::text("two")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .memory(memory.clone())
        .system_prompt("sys")
        .build()
        .unwrap();
    runtime.session(&session).prompt("second").await.unwrap();
    let request = &provider.requests()[0];
    let seen: Vec<(MessageRole, String)> = request
        .messages
        .iter()
        .map(|m| (m.role, m.text().to_owned()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (MessageRole::System, "sys".to_owned()),
            (MessageRole::User, "first".to_owned()),
            (MessageRole::Assistant, String::new()),
            (MessageRole::Tool, "echo: remember me".to_owned()),
            (MessageRole::Assistant, "one".to_owned()),
            (MessageRole::User, "second".to_owned()),
        ]
    );
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 6);
    let sequences: Vec<u64> = stored.iter().map(|m| m.sequence).collect();
    assert_eq!(sequences, (1..=6).collect::<Vec<u64>>());
    // The answer keeps the tokens of the call that wrote it.
    let mut answer = Message::assistant("two");
    answer.usage = Some(oxydra_types::Usage::new(10, 5, 0));
    assert_eq!(stored[5].message, answer);
}

#[tokio::test]
async fn an_interrupted_call_is_given_a_result_on_restore() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    memory.append(&session, &Message::user("go")).await.unwrap();
    memory
        .append(
            &session,
            &Message::assistant_with_tool_calls(None, vec![call("c9", "echo", "{}")]),
        )
        .await
        .unwrap();
    let provider = scripted(vec![ScriptedTurn::text("resumed")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory)
        .build()
        .unwrap();
    runtime.session(&session).prompt("continue").await.unwrap();
    let request = &provider.requests()[0];
    assert_eq!(request.messages.len(), 4);
    assert_no_orphans(&request.messages);
    assert_eq!(request.messages[3].text(), "continue");
}

#[tokio::test]
async fn a_secret_from_a_tool_reaches_neither_the_provider_nor_the_database() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::tool_call("c1", "config", "{}"),
        ScriptedTurn::text("the region is eu-west-1"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(SecretTool)]))
        .memory(memory.clone())
        .build()
        .unwrap();
    let session = SessionId::generate();
    runtime
        .session(&session)
        .prompt("show the config")
        .await
        .unwrap();
    let request = &provider.requests()[1];
    let result = tool_results(request);
    assert_eq!(result.len(), 1);
    assert!(result[0].1.contains("region: eu-west-1"), "{}", result[0].1);
    assert!(result[0].1.contains("REDACTED"), "{}", result[0].1);
    for message in &request.messages {
        assert!(
            !message.text().contains("sk-proj-Xq7"),
            "leaked to the provider: {}",
            message.text()
        );
    }
    for stored in memory.messages(&session).await.unwrap() {
        let json = serde_json::to_string(&stored.message).unwrap();
        assert!(
            !json.contains("sk-proj-Xq7"),
            "leaked to the database: {json}"
        );
        assert!(!json.contains(SECRET));
    }
}

#[tokio::test]
async fn retrieval_injects_snippets_from_earlier_sessions() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("noted: the staging database is called heliotrope"),
        ScriptedTurn::text("it is heliotrope"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .retrieval(memory.clone())
        .retrieval_scope(RetrievalScope::Global)
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    runtime
        .session(&SessionId::generate())
        .prompt("remember that the staging database is called heliotrope")
        .cancel(&cancel)
        .await
        .unwrap();
    // Both texts were indexed.
    let found = memory
        .search("heliotrope", &oxydra_memory::SearchScope::Global, 10)
        .await
        .unwrap();
    assert!(found.len() >= 2, "{found:?}");

    runtime
        .session(&SessionId::generate())
        .prompt("what is the staging database called?")
        .cancel(&cancel)
        .await
        .unwrap();
    let request = &provider.requests()[1];
    let snippets = request
        .messages
        .iter()
        .find(|m| m.role == MessageRole::System && m.text().starts_with(RETRIEVAL_HEADER))
        .expect("a snippets message");
    assert!(snippets.text().contains("\n- "));
    assert!(snippets.text().contains("heliotrope"));
    // The new session holds only the new question besides the injected context.
    assert_eq!(
        request.messages.last().unwrap().text(),
        "what is the staging database called?"
    );
    assert_eq!(request.messages.len(), 2);
}

#[tokio::test]
async fn retrieval_searches_the_session_and_skips_what_the_context_holds() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("noted: the staging database is called heliotrope"),
        ScriptedTurn::text("I do not know yet"),
        ScriptedTurn::text("heliotrope, in eu-west-1"),
    ]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .retrieval(memory.clone())
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    runtime
        .session(&SessionId::generate())
        .prompt("remember that the staging database is called heliotrope")
        .cancel(&cancel)
        .await
        .unwrap();
    // Another session does not see the first one's chunks (session scope by default).
    let session = SessionId::generate();
    runtime
        .session(&session)
        .prompt("which staging database is heliotrope?")
        .cancel(&cancel)
        .await
        .unwrap();
    let request = &provider.requests()[1];
    assert!(
        request
            .messages
            .iter()
            .all(|m| !m.text().starts_with(RETRIEVAL_HEADER)),
        "{:#?}",
        request.messages
    );
    assert_eq!(request.messages.len(), 1);

    // A note indexed for this session but not in its history is injected; the
    // session's own messages, which the context holds verbatim, are not.
    let note = "the heliotrope staging database lives in eu-west-1";
    memory.store_text(Some(&session), note).await.unwrap();
    let query = "where does the heliotrope staging database live?";
    let found = memory
        .search(query, &SearchScope::Session(session.clone()), 8)
        .await
        .unwrap();
    assert!(
        found
            .iter()
            .any(|c| c.text == "which staging database is heliotrope?"),
        "{found:?}"
    );
    runtime
        .session(&session)
        .prompt(query)
        .cancel(&cancel)
        .await
        .unwrap();
    let request = &provider.requests()[2];
    let snippets: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::System && m.text().starts_with(RETRIEVAL_HEADER))
        .map(|m| m.text())
        .collect();
    assert_eq!(
        snippets,
        vec![format!("{RETRIEVAL_HEADER}\n- {note}").as_str()]
    );
    assert_eq!(request.messages.len(), 4);
    assert_eq!(request.messages.last().unwrap().text(), query);
}

#[tokio::test]
async fn a_second_run_does_not_recount_old_messages() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let provider = scripted(vec![
        ScriptedTurn::text("first answer"),
        ScriptedTurn::text("second answer"),
    ]);
    // A window small enough for every message to be counted exactly, with the summary
    // off.
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .limits(window_limits(400, 50, 100.0))
        .build()
        .unwrap();
    let session = SessionId::generate();
    let long = |text: &str| format!("{text} {}", "pear ".repeat(60));
    runtime
        .append_messages(
            &session,
            vec![
                Message::user(long("q0")),
                Message::assistant(long("a0")),
                Message::user(long("q1")),
                Message::assistant(long("a1")),
            ],
        )
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    // Tokio tests run on the current thread: the counter sees every count of the runs.
    let before = testing::messages_counted_on_this_thread();
    runtime
        .session(&session)
        .prompt("first question")
        .cancel(&cancel)
        .await
        .unwrap();
    let first = testing::messages_counted_on_this_thread() - before;
    assert_eq!(first, 5, "the history and the question are counted once");
    runtime
        .session(&session)
        .prompt("second question")
        .cancel(&cancel)
        .await
        .unwrap();
    let second = testing::messages_counted_on_this_thread() - before - first;
    // Only the first run's answer and the new question are new.
    assert_eq!(second, 2);
    assert_eq!(memory.messages(&session).await.unwrap().len(), 8);
}
