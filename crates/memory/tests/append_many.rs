#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! `Memory::append_many`: one transaction, all or nothing, gap-free sequences.

use std::sync::Arc;

use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_types::{Message, SessionId};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_single_appends_interleave_without_gaps() {
    let memory = Arc::new(SqliteMemory::open_in_memory().unwrap());
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

#[tokio::test]
async fn a_failing_message_stores_none_of_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.db");
    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let session = SessionId::from("ses_atomic");
    memory
        .append(&session, &Message::user("before"))
        .await
        .unwrap();
    // Make the third message of the batch fail inside the transaction.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER poison BEFORE INSERT ON conversation_events
         WHEN NEW.payload LIKE '%poison%'
         BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
    )
    .unwrap();
    let batch = vec![
        Message::user("one"),
        Message::user("two"),
        Message::user("poison"),
    ];
    assert!(memory.append_many(&session, &batch).await.is_err());
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 1);
    conn.execute_batch("DROP TRIGGER poison").unwrap();
    drop(conn);
    // The failed batch used no sequence numbers.
    let sequences = memory.append_many(&session, &batch[..2]).await.unwrap();
    assert_eq!(sequences, vec![2, 3]);
}
