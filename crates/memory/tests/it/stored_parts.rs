//! Messages with parts (images, documents) in SQLite: stored in the message JSON, a
//! session written before parts existed reads unchanged, and a text-only message is
//! still stored in that old shape. (The size cap and many parts are conformance cases:
//! `oxydra_memory::conformance`.)

use oxydra_memory::conformance::{PRE_PARTS_ROWS, pre_parts_messages};
use oxydra_memory::{Memory, SqliteConfig, SqliteMemory};
use oxydra_types::{CallId, ContentPart, Message, SessionId};

#[tokio::test]
async fn a_session_written_before_parts_reads_unchanged_and_takes_new_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    // The schema, then the rows written directly, as the old version wrote them (in
    // the keys of schema version 8: session number 1).
    drop(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO sessions (session_id, created_at, updated_at, last_sequence, number) \
         VALUES ('ses_old', 1, 1, 4, 1)",
        [],
    )
    .unwrap();
    for (index, (role, payload)) in PRE_PARTS_ROWS.iter().enumerate() {
        conn.execute(
            "INSERT INTO conversation_events (id, session_id, sequence, role, payload, created_at) \
             VALUES ((1 << 32) | ?1, 'ses_old', ?1, ?2, ?3, 1)",
            rusqlite::params![index as i64 + 1, role, payload],
        )
        .unwrap();
    }
    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let session = SessionId::from("ses_old");
    let stored = memory.messages(&session).await.unwrap();
    let read: Vec<Message> = stored.iter().map(|s| s.message.clone()).collect();
    assert_eq!(read, pre_parts_messages());
    assert!(read.iter().all(|message| message.parts.is_empty()));

    // The session goes on with a tool result that carries an image.
    let image = ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let result = Message::tool_result(CallId::from("c2"), "file_read", "Attached `a.png`.")
        .with_parts(vec![image.clone()]);
    let sequence = memory.append(&session, &result).await.unwrap();
    assert_eq!(sequence, 5);
    let text_only = Message::assistant("A dot.");
    memory.append(&session, &text_only).await.unwrap();
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[4].message, result);
    assert_eq!(stored[4].message.parts, vec![image]);
    // A text-only message is stored in the old shape, without a `parts` key.
    let payload: String = conn
        .query_row(
            "SELECT payload FROM conversation_events WHERE session_id = 'ses_old' AND sequence = 6",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(payload, r#"{"role":"assistant","content":"A dot."}"#);
}
