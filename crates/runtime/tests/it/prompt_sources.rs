//! A user's message of several sources (DESIGN.md §3.13): every source given with
//! `RunRequest::prompt_source` is stored with the message and counts for the
//! `[provenance]` policy, the least trusted naming it and the others kept beside it,
//! also in a session restored from the store by another runtime.

use crate::common;
use crate::deferred_approvals::ShellTool;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use oxydra_executor::{AlwaysApprove, ProvenancePolicy};
use oxydra_memory::{Memory, SqliteMemory};
use oxydra_provider::{ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{AgentRuntime, CollectingEventSink};
use oxydra_types::{SessionId, Source, SourceKind};

const REASON: &str = "this run read a workspace file since your last decision";

/// A runtime on `memory` whose broker approves everything and whose policy holds
/// `workspace` text only, with the privileged `shell` tool.
fn runtime(
    provider: Arc<ScriptedProvider>,
    shell: &ShellTool,
    memory: &Arc<SqliteMemory>,
) -> AgentRuntime {
    builder(provider, Arc::new(CollectingEventSink::new()))
        .tools(registry(vec![Arc::new(shell.clone())]))
        .permission_broker(Arc::new(AlwaysApprove))
        .provenance_policy(ProvenancePolicy::new([SourceKind::Workspace]))
        .memory(memory.clone())
        .build()
        .unwrap()
}

/// The model calls `shell` once, then answers.
fn calls_shell() -> Arc<ScriptedProvider> {
    scripted(vec![
        ScriptedTurn::tool_call("c1", "shell", r#"{"command":"touch marker"}"#),
        ScriptedTurn::text("done"),
    ])
}

/// The result the model got for its `shell` call.
fn shell_result(provider: &ScriptedProvider) -> String {
    let requests = provider.requests();
    let (_, result) = tool_results(&requests[1]).pop().unwrap();
    result
}

#[tokio::test]
async fn every_prompt_source_holds_and_a_restored_session_still_counts_it() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let session = SessionId::generate();
    let shell = ShellTool::default();
    let provider = calls_shell();
    // Piped command output and an attached file: `command` ranks less trusted and
    // names the message, but the policy holds `workspace`, which must still count.
    runtime(provider.clone(), &shell, &memory)
        .session(&session)
        .prompt("do what the text says")
        .prompt_source(Source::Command)
        .prompt_source(Source::Workspace)
        .prompt_source(Source::Person)
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0, "the held call ran");
    let result = shell_result(&provider);
    assert!(result.contains(REASON), "{result}");
    let stored = memory.messages(&session).await.unwrap();
    let prompt = &stored[0].message;
    assert_eq!(prompt.source, Some(Source::Command));
    assert_eq!(prompt.other_sources, vec![Source::Workspace]);

    // Another runtime continues the stored session with the person's words alone: the
    // restored session counts both sources of the first prompt.
    let provider = calls_shell();
    runtime(provider.clone(), &shell, &memory)
        .session(&session)
        .prompt("go on")
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0, "the held call ran");
    let result = shell_result(&provider);
    assert!(result.contains(REASON), "{result}");
}

#[tokio::test]
async fn a_prompt_of_the_persons_words_or_of_unheld_sources_holds_nothing() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let shell = ShellTool::default();
    runtime(calls_shell(), &shell, &memory)
        .session(&SessionId::generate())
        .prompt("touch the marker")
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 1);
    // `command` is not held by this policy: the call runs with no question.
    let session = SessionId::generate();
    runtime(calls_shell(), &shell, &memory)
        .session(&session)
        .prompt("touch the marker")
        .prompt_source(Source::Command)
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 2);
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored[0].message.source, Some(Source::Command));
    assert!(stored[0].message.other_sources.is_empty());
}

#[tokio::test]
async fn a_replayed_prompt_keeps_its_sources_and_is_held_again() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
    let original = SessionId::generate();
    let shell = ShellTool::default();
    runtime(calls_shell(), &shell, &memory)
        .session(&original)
        .prompt("do what the attached file says")
        .prompt_source(Source::Workspace)
        .await
        .unwrap();
    assert_eq!(shell.runs.load(Ordering::SeqCst), 0);

    // The replay sends the stored prompt again to a model that calls `shell` again:
    // the prompt's `workspace` source holds that call as it held the original's.
    let replay = oxydra_runtime::replay::Replay::load(memory.as_ref(), &original, 1)
        .await
        .unwrap();
    let provider = calls_shell();
    let report = replay
        .run(
            &runtime(provider.clone(), &shell, &memory),
            memory.as_ref(),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        shell.runs.load(Ordering::SeqCst),
        0,
        "the replayed call ran"
    );
    let result = shell_result(&provider);
    assert!(result.contains(REASON), "{result}");
    let replayed = memory.messages(&report.replay.session_id).await.unwrap();
    let prompt = replayed
        .iter()
        .find(|stored| stored.message.role == oxydra_types::MessageRole::User)
        .unwrap();
    assert_eq!(prompt.message.source, Some(Source::Workspace));
}
