//! Messages with parts (images, documents) in PostgreSQL: stored in the message JSON,
//! a session written before parts existed reads unchanged, a text-only message is
//! still stored in that old shape, and a message over the size cap is an error naming
//! the session that stores nothing.

use oxydra_memory::{Memory, MemoryError};
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, PostgresMemoryConfig};
use oxydra_types::{CallId, ContentPart, Message, SessionId, ToolCall};

use crate::common::raw;

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

#[tokio::test]
async fn a_session_written_before_parts_reads_unchanged_and_takes_new_parts() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    // The schema, then the rows written directly, as the old version wrote them.
    let db = test.connect().await;
    let client = raw(test.url()).await;
    let schema = test.schema();
    client
        .execute(
            &format!("INSERT INTO {schema}.sessions (session_id, created_at, updated_at, last_sequence) VALUES ('ses_old', 1, 1, 4)"),
            &[],
        )
        .await
        .unwrap();
    for (index, (role, payload)) in OLD_ROWS.iter().enumerate() {
        client
            .execute(
                &format!("INSERT INTO {schema}.conversation_events (session_id, sequence, role, payload, created_at) VALUES ('ses_old', $1, $2, $3, 1)"),
                &[&(index as i64 + 1), role, payload],
            )
            .await
            .unwrap();
    }
    let memory = PostgresMemory::new(db, PostgresMemoryConfig::default());
    let session = SessionId::from("ses_old");
    let read: Vec<Message> = memory
        .messages(&session)
        .await
        .unwrap()
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    assert_eq!(
        read,
        vec![
            Message::user("what is in a.rs?"),
            Message::assistant_with_tool_calls(
                None,
                vec![ToolCall::new(
                    CallId::from("c1"),
                    "file_read",
                    r#"{"path":"a.rs"}"#
                )],
            ),
            Message::tool_result(CallId::from("c1"), "file_read", "fn main() {}"),
            Message::assistant("It holds main."),
        ]
    );
    // The session goes on with a tool result that carries a PDF.
    let pdf = ContentPart::pdf(b"%PDF-1.7\n%%EOF", Some("r.pdf".into()));
    let result = Message::tool_result(CallId::from("c2"), "file_read", "Attached `r.pdf`.")
        .with_parts(vec![pdf]);
    assert_eq!(memory.append(&session, &result).await.unwrap(), 5);
    memory
        .append(&session, &Message::assistant("A report."))
        .await
        .unwrap();
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[4].message, result);
    let payload: String = client
        .query_one(
            &format!("SELECT payload FROM {schema}.conversation_events WHERE session_id = 'ses_old' AND sequence = 6"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(payload, r#"{"role":"assistant","content":"A report."}"#);
}

#[tokio::test]
async fn a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_lost() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    let config = PostgresMemoryConfig {
        max_message_bytes: 4096,
        ..PostgresMemoryConfig::default()
    };
    let memory = PostgresMemory::new(test.connect().await, config);
    let session = SessionId::from("ses_capped");
    memory
        .append(&session, &Message::user("look"))
        .await
        .unwrap();
    let big = Message::tool_result(CallId::from("c1"), "file_read", "Attached `big.png`.")
        .with_parts(vec![ContentPart::image("image/png", &[7u8; 8192])]);
    let batch = [Message::assistant("one"), big];
    let error = memory.append_many(&session, &batch).await.unwrap_err();
    let MemoryError::MessageTooLarge { session: named, .. } = &error else {
        panic!("expected MessageTooLarge, got {error:?}");
    };
    assert_eq!(named, &session);
    assert!(error.to_string().contains("session ses_capped"), "{error}");
    assert_eq!(memory.messages(&session).await.unwrap().len(), 1);
    assert_eq!(
        memory
            .append(&session, &Message::assistant("ok"))
            .await
            .unwrap(),
        2
    );
}
