//! Messages with parts (images, documents) in PostgreSQL: stored in the message JSON,
//! a session written before parts existed reads unchanged, and a text-only message is
//! still stored in that old shape. (The size cap and many parts are conformance cases:
//! `memory_conformance`.)

use oxydra_memory::Memory;
use oxydra_memory::conformance::{PRE_PARTS_ROWS, pre_parts_messages};
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, PostgresMemoryConfig};
use oxydra_types::{CallId, ContentPart, Message, SessionId};

use crate::common::raw;

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
    for (index, (role, payload)) in PRE_PARTS_ROWS.iter().enumerate() {
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
    assert_eq!(read, pre_parts_messages());
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
