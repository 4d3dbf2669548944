//! A run request without a prompt: a run taken over from a process that died
//! continues its stored conversation without sending the prompt again.

use crate::common;

use std::sync::Arc;

use common::*;
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::ScriptedTurn;
use oxydra_runtime::CollectingEventSink;
use oxydra_types::{CallId, Message, MessageRole, SessionId, ToolCall};

#[tokio::test]
async fn an_orphaned_call_is_repaired_and_the_loop_continues_without_a_new_prompt() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    // What a process stored before it was killed: the prompt and a tool call whose
    // result never came.
    memory
        .append_many(
            &session,
            &[
                Message::user("the task"),
                Message::assistant_with_tool_calls(
                    None,
                    vec![ToolCall::new(CallId::from("c1"), "echo", r#"{"text":"x"}"#)],
                ),
            ],
        )
        .await
        .unwrap();
    let provider = scripted(vec![ScriptedTurn::text("finished")]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(EchoTool)]))
        .memory(memory.clone())
        .build()
        .unwrap();
    let outcome = runtime.session(&session).await.unwrap();
    assert_eq!(outcome.final_text, "finished");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let users = requests[0]
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::User)
        .count();
    assert_eq!(users, 1, "the prompt is not sent again");
    // The model saw the orphaned call answered `interrupted` (synthesised on restore,
    // as for any restored session), and the stored session restores whole.
    let sent: Vec<MessageRole> = requests[0].messages.iter().map(|m| m.role).collect();
    assert!(
        sent.ends_with(&[MessageRole::User, MessageRole::Assistant, MessageRole::Tool]),
        "{sent:?}"
    );
    let restored: Vec<MessageRole> = memory
        .restore(&session)
        .await
        .unwrap()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(
        restored,
        [
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::Tool,
            MessageRole::Assistant
        ]
    );
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 3, "only the answer was added");
    // The answer keeps the tokens of the call that wrote it.
    let mut answer = Message::assistant("finished");
    answer.usage = Some(oxydra_types::Usage::new(10, 5, 0));
    assert_eq!(stored[2].message, answer);
}

#[tokio::test]
async fn a_conversation_that_already_ended_is_not_sent_again() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    memory
        .append_many(
            &session,
            &[Message::user("the task"), Message::assistant("all done")],
        )
        .await
        .unwrap();
    let provider = scripted(vec![]);
    let runtime = builder(provider.clone(), Arc::new(CollectingEventSink::new()))
        .memory(memory.clone())
        .build()
        .unwrap();
    let outcome = runtime.session(&session).await.unwrap();
    assert_eq!(outcome.final_text, "all done");
    assert_eq!(outcome.turns, 0);
    assert!(provider.requests().is_empty());
    assert_eq!(memory.messages(&session).await.unwrap().len(), 2);
}
