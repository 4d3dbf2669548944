#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Messages with parts (images, documents): the size cap on one message, many parts in
//! one message, and what a session written before parts existed holds.

use oxydra_types::{CallId, ContentPart, Message, SessionId, ToolCall};

use super::MemoryBackend;
use crate::{Memory, MemoryError, RetrievalConfig};

/// A session's rows as Oxydra wrote them before parts existed (`main` before
/// DESIGN.md §3.10): `(role, payload)` in sequence order, from 1. A backend's own
/// test writes them with its raw SQL; they must read as [`pre_parts_messages`].
pub const PRE_PARTS_ROWS: [(&str, &str); 4] = [
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

/// The messages [`PRE_PARTS_ROWS`] hold.
pub fn pre_parts_messages() -> Vec<Message> {
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

/// A batch holding a message over the cap is an error naming the session, the limit
/// and the message's parts; nothing of the batch is stored, the session goes on, and
/// the large message alone is refused too.
pub async fn a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_lost<
    B: MemoryBackend,
>(
    backend: &B,
) {
    let memory = backend.open_capped(4096);
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
    assert_eq!(memory.messages(&session).await.unwrap().len(), 1);
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

/// A message with a thousand parts reads back whole, in order.
pub async fn a_thousand_parts_round_trip<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let session = SessionId::from("ses_many");
    let parts: Vec<ContentPart> = (0..1_000u32)
        .map(|i| ContentPart::image("image/gif", &i.to_be_bytes()))
        .collect();
    let message = Message::user("many").with_parts(parts);
    memory.append(&session, &message).await.unwrap();
    let stored = memory.messages(&session).await.unwrap();
    assert_eq!(stored[0].message, message);
}
