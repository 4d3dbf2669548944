//! Messages with parts (images, documents) in SQLite: stored in the message JSON, a
//! session written before parts existed reads unchanged, a text-only message is still
//! stored in that old shape, and a message over the size cap is an error naming the
//! session that stores nothing.

use oxydra_memory::{Memory, MemoryError, SqliteConfig, SqliteMemory};
use oxydra_types::{CallId, ContentPart, Message, SessionId, ToolCall};

/// Payloads as Oxydra wrote them before parts existed (`main` before DESIGN.md §3.10).
const OLD_ROWS: [(&str, &str); 4] = [
    ("user", r#"{"role":"user","content":"what is in a.rs?"}"#),
    (
        "assistant",
        r#"{"role":"assistant","tool_calls":[{"id":"c1","name":"file_read","arguments":"{\"path\":\"a.rs\"}"}]}"#,
    ),
    (
        "tool",
        r#"{"role":"tool","content":"fn main() {}","tool_call_id":"c1","name":"file_read"}"#,
    ),
    (
        "assistant",
        r#"{"role":"assistant","content":"It holds main."}"#,
    ),
];

fn old_messages() -> Vec<Message> {
    vec![
        Message::user("what is in a.rs?"),
        Message::assistant_with_tool_calls(
            None,
            vec![ToolCall::new(
                CallId::from("c1"),
                "file_read",
                r#"{"path":"a.rs"}"#,
            )],
        ),
        Message::tool_result(CallId::from("c1"), "file_read", "fn main() {}"),
        Message::assistant("It holds main."),
    ]
}

#[tokio::test]
async fn a_session_written_before_parts_reads_unchanged_and_takes_new_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    // The schema, then the rows written directly, as the old version wrote them.
    drop(SqliteMemory::open(&path, SqliteConfig::default()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO sessions (session_id, created_at, updated_at, last_sequence) VALUES ('ses_old', 1, 1, 4)",
        [],
    )
    .unwrap();
    for (index, (role, payload)) in OLD_ROWS.iter().enumerate() {
        conn.execute(
            "INSERT INTO conversation_events (session_id, sequence, role, payload, created_at) VALUES ('ses_old', ?1, ?2, ?3, 1)",
            rusqlite::params![index as i64 + 1, role, payload],
        )
        .unwrap();
    }
    let memory = SqliteMemory::open(&path, SqliteConfig::default()).unwrap();
    let session = SessionId::from("ses_old");
    let stored = memory.messages(&session).await.unwrap();
    let read: Vec<Message> = stored.iter().map(|s| s.message.clone()).collect();
    assert_eq!(read, old_messages());
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

#[tokio::test]
async fn a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let config = SqliteConfig {
        max_message_bytes: 4096,
        ..SqliteConfig::default()
    };
    let memory = SqliteMemory::open(dir.path().join("cap.db"), config).unwrap();
    let session = SessionId::from("ses_capped");
    memory
        .append(&session, &Message::user("look"))
        .await
        .unwrap();
    let big = Message::tool_result(CallId::from("c1"), "file_read", "Attached `big.png`.")
        .with_parts(vec![ContentPart::image("image/png", &[7u8; 8192])]);
    let batch = [Message::assistant("one"), big];
    let error = memory.append_many(&session, &batch).await.unwrap_err();
    let MemoryError::MessageTooLarge {
        session: named,
        limit,
        ..
    } = &error
    else {
        panic!("expected MessageTooLarge, got {error:?}");
    };
    assert_eq!(named, &session);
    assert_eq!(*limit, 4096);
    let text = error.to_string();
    assert!(text.contains("session ses_capped"), "{text}");
    assert!(text.contains("image (image/png, 8.0 KiB)"), "{text}");
    // Nothing of the batch was stored, and the session goes on.
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        memory
            .append(&session, &Message::assistant("ok"))
            .await
            .unwrap(),
        2
    );
    let error = memory.append(&session, &batch[1]).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::MessageTooLarge { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_thousand_parts_round_trip() {
    let memory = SqliteMemory::open_in_memory().unwrap();
    let session = SessionId::from("ses_many");
    let parts: Vec<ContentPart> = (0..1_000u32)
        .map(|i| ContentPart::image("image/gif", &i.to_be_bytes()))
        .collect();
    let message = Message::user("many").with_parts(parts);
    memory.append(&session, &message).await.unwrap();
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored[0].message, message);
}
