//! `SqliteMemory::append_many` is one transaction: a failing message stores none of the batch.

use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_types::{Message, SessionId};

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
