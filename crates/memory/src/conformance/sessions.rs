#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Sessions, messages, restore, `append_many` and the summary compare-and-swap.

use std::sync::Arc;

use oxydra_types::{CallId, Message, MessageRole, SessionId, ToolCall};

use super::MemoryBackend;
use crate::{INTERRUPTED_RESULT, Memory, MemoryRetrieval, RetrievalConfig, SearchScope};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall::new(CallId::from(id), name, r#"{"path":"a.txt"}"#)
}

/// Appends get sequences 1, 2, …; a store opened again restores them in order and continues the sequence; unknown sessions are empty.
pub async fn append_and_restore_in_order_across_reopening<B: MemoryBackend>(backend: &B) {
    let session = SessionId::generate();
    let conversation = vec![
        Message::system("be brief"),
        Message::user("read a.txt"),
        Message::assistant_with_tool_calls(Some("reading".into()), vec![call("c1", "file_read")]),
        Message::tool_result(CallId::from("c1"), "file_read", "hello ✓"),
        Message::assistant("it says hello"),
    ];
    {
        let memory = backend.open(RetrievalConfig::default());
        assert!(!memory.session_exists(&session).await.unwrap());
        for (i, message) in conversation.iter().enumerate() {
            assert_eq!(
                memory.append(&session, message).await.unwrap(),
                i as u64 + 1
            );
        }
    }
    let memory = backend.open(RetrievalConfig::default());
    assert!(memory.session_exists(&session).await.unwrap());
    assert_eq!(memory.restore(&session).await.unwrap(), conversation);
    let stored = memory.messages(&session).await.unwrap();
    let sequences: Vec<u64> = stored.iter().map(|m| m.sequence).collect();
    assert_eq!(sequences, vec![1, 2, 3, 4, 5]);
    assert!(stored.iter().all(|m| m.created_at_ms > 1_600_000_000_000));
    // Appending after reopening continues the sequence.
    assert_eq!(
        memory
            .append(&session, &Message::user("more"))
            .await
            .unwrap(),
        6
    );
    // Unknown sessions are empty, not errors.
    let unknown = SessionId::from("ses_unknown");
    assert!(memory.messages(&unknown).await.unwrap().is_empty());
    assert!(memory.restore(&unknown).await.unwrap().is_empty());
}

/// Concurrent appends to one session get unique, gap-free sequences, each task's messages in its order.
pub async fn concurrent_appends_are_unique_and_gap_free<B: MemoryBackend>(backend: &B) {
    let memory = Arc::new(backend.open(RetrievalConfig::default()));
    let session = SessionId::from("ses_busy");
    let other = SessionId::from("ses_other");
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..8 {
        let memory = Arc::clone(&memory);
        let (session, other) = (session.clone(), other.clone());
        tasks.spawn(async move {
            let mut seen = Vec::new();
            for i in 0..50 {
                let text = format!("task {task} message {i}");
                seen.push((
                    memory
                        .append(&session, &Message::user(&text))
                        .await
                        .unwrap(),
                    text,
                ));
                if i % 10 == 0 {
                    memory.append(&other, &Message::user("x")).await.unwrap();
                }
            }
            seen
        });
    }
    let mut acknowledged = Vec::new();
    while let Some(result) = tasks.join_next().await {
        acknowledged.extend(result.unwrap());
    }
    let stored = memory.messages(&session).await.unwrap();
    let sequences: Vec<u64> = stored.iter().map(|m| m.sequence).collect();
    assert_eq!(sequences, (1..=400).collect::<Vec<u64>>());
    for (sequence, text) in acknowledged {
        assert_eq!(stored[sequence as usize - 1].message.text(), text);
    }
    // Each task's own messages are in its order.
    for task in 0..8 {
        let mine: Vec<String> = stored
            .iter()
            .map(|m| m.message.text().to_owned())
            .filter(|t| t.starts_with(&format!("task {task} ")))
            .collect();
        let expected: Vec<String> = (0..50)
            .map(|i| format!("task {task} message {i}"))
            .collect();
        assert_eq!(mine, expected);
    }
    let other_sequences: Vec<u64> = memory
        .messages(&other)
        .await
        .unwrap()
        .iter()
        .map(|m| m.sequence)
        .collect();
    assert_eq!(other_sequences, (1..=40).collect::<Vec<u64>>());
}

/// Sessions are listed most recently updated first, with their message counts.
pub async fn list_sessions_most_recent_first_with_counts<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    assert!(memory.list_sessions().await.unwrap().is_empty());
    let (a, b) = (SessionId::from("ses_a"), SessionId::from("ses_b"));
    memory.append(&a, &Message::user("1")).await.unwrap();
    memory.append(&b, &Message::user("1")).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    memory.append(&a, &Message::user("2")).await.unwrap();
    let sessions = memory.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].session_id, a);
    assert_eq!(sessions[0].messages, 2);
    assert_eq!(sessions[1].messages, 1);
    assert!(sessions[0].updated_at_ms > sessions[0].created_at_ms);
}

/// Of two summaries stored against one epoch exactly one wins; a stale epoch is refused.
pub async fn summary_epoch_compare_and_swap<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let session = SessionId::from("ses_summary");
    let initial = memory.load_summary(&session).await.unwrap();
    assert_eq!(
        (initial.text, initial.covers_through, initial.epoch),
        (None, 0, 0)
    );

    // Two writers read epoch 0 and race: exactly one wins.
    let (first, second) = tokio::join!(
        memory.store_summary(&session, 0, "summary A", 10),
        memory.store_summary(&session, 0, "summary B", 12),
    );
    let results = [first.unwrap(), second.unwrap()];
    assert_eq!(results.iter().filter(|r| **r == Some(1)).count(), 1);
    assert_eq!(results.iter().filter(|r| r.is_none()).count(), 1);
    let stored = memory.load_summary(&session).await.unwrap();
    assert_eq!(stored.epoch, 1);
    let winner = if results[0].is_some() {
        ("summary A", 10)
    } else {
        ("summary B", 12)
    };
    assert_eq!(stored.text.as_deref(), Some(winner.0));
    assert_eq!(stored.covers_through, winner.1);

    // A stale epoch is refused; the current one advances.
    assert_eq!(
        memory
            .store_summary(&session, 0, "stale", 99)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        memory.store_summary(&session, 1, "next", 20).await.unwrap(),
        Some(2)
    );
    assert_eq!(
        memory.load_summary(&session).await.unwrap().text.as_deref(),
        Some("next")
    );
    // An unknown session with a non-zero expected epoch is refused too.
    let fresh = SessionId::from("ses_fresh");
    assert_eq!(memory.store_summary(&fresh, 3, "x", 1).await.unwrap(), None);
}

/// Restore adds an `interrupted` result for each unanswered tool call only, and writes nothing.
pub async fn restore_synthesises_interrupted_results_only_for_orphans<B: MemoryBackend>(
    backend: &B,
) {
    let memory = backend.open(RetrievalConfig::default());
    let session = SessionId::from("ses_orphans");
    let stored = vec![
        Message::user("do three things"),
        Message::assistant_with_tool_calls(
            None,
            vec![
                call("a", "file_read"),
                call("b", "file_list"),
                call("c", "shell_exec"),
            ],
        ),
        Message::tool_result(CallId::from("a"), "file_read", "done a"),
        // killed here: b and c never got results
    ];
    for message in &stored {
        memory.append(&session, message).await.unwrap();
    }
    // messages() is exactly what is stored.
    let raw: Vec<Message> = memory
        .messages(&session)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(raw, stored);

    let restored = memory.restore(&session).await.unwrap();
    assert_eq!(restored.len(), 5);
    assert_eq!(&restored[..3], &stored[..]);
    for (message, (id, name)) in restored[3..]
        .iter()
        .zip([("b", "file_list"), ("c", "shell_exec")])
    {
        assert_eq!(message.role, MessageRole::Tool);
        assert_eq!(message.tool_call_id.as_ref().unwrap().as_str(), id);
        assert_eq!(message.name.as_deref(), Some(name));
        assert_eq!(message.text(), INTERRUPTED_RESULT);
        assert!(message.text().contains("interrupted"));
    }
    // The answered call got no synthetic result.
    let for_a = restored
        .iter()
        .filter(|m| m.tool_call_id.as_ref().is_some_and(|id| id.as_str() == "a"))
        .count();
    assert_eq!(for_a, 1);
    // Restoring does not write.
    assert_eq!(memory.messages(&session).await.unwrap().len(), 3);
}

/// Deleting a session removes its messages, summary and chunks (also from a loaded search cache), and nothing else.
pub async fn delete_session_removes_messages_state_and_chunks<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let (gone, kept) = (SessionId::from("ses_gone"), SessionId::from("ses_kept"));
    for session in [&gone, &kept] {
        memory
            .append(session, &Message::user("hello"))
            .await
            .unwrap();
        memory
            .store_summary(session, 0, "summary", 1)
            .await
            .unwrap();
        memory
            .store_text(Some(session), "zanzibar quokka migration notes")
            .await
            .unwrap();
    }
    // Load the vector cache before deleting, so the delete must update it.
    assert_eq!(
        memory
            .search("zanzibar quokka", &SearchScope::Global, 10)
            .await
            .unwrap()
            .len(),
        2
    );

    memory.delete_session(&gone).await.unwrap();
    assert!(!memory.session_exists(&gone).await.unwrap());
    assert!(memory.messages(&gone).await.unwrap().is_empty());
    assert_eq!(memory.load_summary(&gone).await.unwrap().epoch, 0);
    let hits = memory
        .search("zanzibar quokka", &SearchScope::Global, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id.as_ref(), Some(&kept));
    assert!(
        memory
            .search("zanzibar", &SearchScope::Session(gone.clone()), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The other session is untouched, and the deleted one starts again from 1.
    assert_eq!(memory.messages(&kept).await.unwrap().len(), 1);
    assert_eq!(
        memory.append(&gone, &Message::user("again")).await.unwrap(),
        1
    );
    // Deleting an unknown session is fine.
    memory
        .delete_session(&SessionId::from("ses_never"))
        .await
        .unwrap();
}

/// `append_many` batches are contiguous and in order amid concurrent single appends; no gaps.
pub async fn batches_and_single_appends_interleave_without_gaps<B: MemoryBackend>(backend: &B) {
    let memory = Arc::new(backend.open(RetrievalConfig::default()));
    let session = SessionId::from("ses_batch");
    let mut tasks = Vec::new();
    for task in 0..4 {
        let memory = Arc::clone(&memory);
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for round in 0..5 {
                if task % 2 == 0 {
                    let batch: Vec<Message> = (0..3)
                        .map(|i| Message::user(format!("t{task} r{round} m{i}")))
                        .collect();
                    let sequences = memory.append_many(&session, &batch).await.unwrap();
                    // A batch is contiguous and in order.
                    assert_eq!(sequences.len(), 3);
                    assert_eq!(sequences[1], sequences[0] + 1);
                    assert_eq!(sequences[2], sequences[0] + 2);
                    mine.extend(sequences.into_iter().zip(batch));
                } else {
                    let message = Message::user(format!("t{task} r{round}"));
                    let sequence = memory.append(&session, &message).await.unwrap();
                    mine.push((sequence, message));
                }
            }
            mine
        }));
    }
    let mut expected = Vec::new();
    for task in tasks {
        expected.extend(task.await.unwrap());
    }
    expected.sort_by_key(|(sequence, _)| *sequence);
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 2 * 5 * 3 + 2 * 5);
    for (index, (stored, (sequence, message))) in stored.iter().zip(&expected).enumerate() {
        assert_eq!(stored.sequence, index as u64 + 1);
        assert_eq!(stored.sequence, *sequence);
        assert_eq!(stored.message, *message);
    }
    assert!(memory.append_many(&session, &[]).await.unwrap().is_empty());
}
