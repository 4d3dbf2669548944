//! How messages are stored, written once for every backend: each message is one JSON
//! document (`payload`) beside its sequence and creation time, and reading a row back
//! either gives the [`StoredMessage`] or names the corrupt record.

use oxydra_types::{Message, SessionId};

use crate::error::MemoryError;
use crate::traits::StoredMessage;

/// Default cap on one stored message (its JSON, parts included): 32 MiB, room for a
/// few images or PDFs at `file_read`'s 5 MiB cap once base64-encoded.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// The payloads of `messages`, in order, for session `session` of the database at
/// `location` (named if a message cannot be encoded). A payload over `max_bytes` is
/// [`MemoryError::MessageTooLarge`] naming the session and the message; then no
/// payload is returned, so nothing of the append is stored.
pub fn encode_messages(
    messages: &[Message],
    location: &str,
    session: &SessionId,
    max_bytes: usize,
) -> Result<Vec<String>, MemoryError> {
    let payloads = messages
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| MemoryError::Corrupt {
            location: location.to_owned(),
            what: format!("new message of session {session}"),
            message: error.to_string(),
        })?;
    for (message, payload) in messages.iter().zip(&payloads) {
        if payload.len() > max_bytes {
            return Err(MemoryError::MessageTooLarge {
                location: location.to_owned(),
                session: session.clone(),
                what: describe(message),
                bytes: payload.len(),
                limit: max_bytes,
            });
        }
    }
    Ok(payloads)
}

/// `message` as an error names it: `a tool message` or `a user message with 2 parts
/// (image (image/png, 4.0 MiB); document (application/pdf, 30.0 MiB))`.
fn describe(message: &Message) -> String {
    let role = message.role.as_str();
    if message.parts.is_empty() {
        return format!("a {role} message");
    }
    let parts: Vec<String> = message
        .parts
        .iter()
        .take(5)
        .map(|part| part.describe())
        .collect();
    let more = message.parts.len().saturating_sub(parts.len());
    let tail = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    let count = message.parts.len();
    let noun = if count == 1 { "part" } else { "parts" };
    format!(
        "a {role} message with {count} {noun} ({}{tail})",
        parts.join("; ")
    )
}

/// The message of a stored row of `session`: `sequence`, `payload` (the JSON bytes) and
/// `created_at_ms`. A payload that is not a message is [`MemoryError::Corrupt`] naming
/// the session and sequence. A negative sequence (a row no Oxydra wrote) reads as 0.
pub fn decode_message(
    sequence: i64,
    payload: &[u8],
    created_at_ms: i64,
    location: &str,
    session: &SessionId,
) -> Result<StoredMessage, MemoryError> {
    let message =
        serde_json::from_slice::<Message>(payload).map_err(|error| MemoryError::Corrupt {
            location: location.to_owned(),
            what: format!("session {session} message {sequence}"),
            message: error.to_string(),
        })?;
    Ok(StoredMessage {
        sequence: stored_count(sequence),
        message,
        created_at_ms,
    })
}

/// A stored sequence or count as `u64`; a negative one reads as 0.
pub fn stored_count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The one sequence an append of one message got (`append` through `append_many`).
pub fn single_sequence(
    sequences: &[u64],
    location: &str,
    session: &SessionId,
) -> Result<u64, MemoryError> {
    sequences
        .first()
        .copied()
        .ok_or_else(|| MemoryError::Corrupt {
            location: location.to_owned(),
            what: format!("append to session {session}"),
            message: "no sequence returned".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionId {
        SessionId::from("ses_x")
    }

    #[test]
    fn messages_round_trip_through_their_payloads() {
        let messages = [Message::user("hello \"there\""), Message::assistant("hi")];
        let payloads =
            encode_messages(&messages, "db", &session(), DEFAULT_MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(payloads.len(), 2);
        for (n, (payload, message)) in payloads.iter().zip(&messages).enumerate() {
            let stored =
                decode_message(n as i64 + 1, payload.as_bytes(), 99, "db", &session()).unwrap();
            assert_eq!(&stored.message, message);
            assert_eq!((stored.sequence, stored.created_at_ms), (n as u64 + 1, 99));
        }
        assert!(
            encode_messages(&[], "db", &session(), DEFAULT_MAX_MESSAGE_BYTES)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn parts_are_stored_in_the_message_json_and_round_trip() {
        use oxydra_types::ContentPart;
        let message = Message::user("see").with_parts(vec![
            ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n"),
            ContentPart::pdf(b"%PDF-1.7", Some("a.pdf".into())),
            ContentPart::image_url("https://example.com/a.png"),
        ]);
        let payloads = encode_messages(
            std::slice::from_ref(&message),
            "db",
            &session(),
            DEFAULT_MAX_MESSAGE_BYTES,
        )
        .unwrap();
        assert!(
            payloads[0].contains(r#""parts":[{"type":"image""#),
            "{}",
            payloads[0]
        );
        let stored = decode_message(1, payloads[0].as_bytes(), 0, "db", &session()).unwrap();
        assert_eq!(stored.message, message);
    }

    #[test]
    fn a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_encoded() {
        use oxydra_types::ContentPart;
        let small = Message::user("hi");
        let big = Message::tool_result(oxydra_types::CallId::from("c1"), "file_read", "img")
            .with_parts(vec![ContentPart::image("image/png", &[0u8; 3000])]);
        let error =
            encode_messages(&[small.clone(), big], "/tmp/m.db", &session(), 2048).unwrap_err();
        let MemoryError::MessageTooLarge {
            session: named,
            bytes,
            limit,
            ..
        } = &error
        else {
            panic!("expected MessageTooLarge, got {error:?}");
        };
        assert_eq!(named, &session());
        assert!(*bytes > 4000 && *limit == 2048, "{bytes} {limit}");
        let text = error.to_string();
        assert!(text.contains("session ses_x"), "{text}");
        assert!(
            text.contains("a tool message with 1 part (image (image/png, 2.9 KiB))"),
            "{text}"
        );
        assert!(text.contains("max_message_bytes"), "{text}");
        // At the cap is fine.
        let payload = serde_json::to_string(&small).unwrap();
        assert!(encode_messages(&[small], "db", &session(), payload.len()).is_ok());
    }

    #[test]
    fn a_payload_that_is_not_a_message_names_the_record() {
        for payload in [
            &b"{not json"[..],
            b"",
            b"null",
            b"{\"role\":\"wizard\",\"content\":\"x\"}",
            b"\xff\xfe",
        ] {
            let error = decode_message(7, payload, 0, "/tmp/m.db", &session()).unwrap_err();
            let MemoryError::Corrupt { location, what, .. } = &error else {
                panic!("expected Corrupt, got {error:?}");
            };
            assert_eq!(location, "/tmp/m.db");
            assert_eq!(what, "session ses_x message 7");
        }
    }

    #[test]
    fn negative_sequences_and_counts_read_as_zero() {
        let payload = encode_messages(
            &[Message::user("a")],
            "db",
            &session(),
            DEFAULT_MAX_MESSAGE_BYTES,
        )
        .unwrap();
        let stored = decode_message(-5, payload[0].as_bytes(), -1, "db", &session()).unwrap();
        assert_eq!((stored.sequence, stored.created_at_ms), (0, -1));
        assert_eq!(stored_count(i64::MIN), 0);
        assert_eq!(stored_count(i64::MAX), i64::MAX as u64);
    }

    #[test]
    fn an_append_without_a_sequence_is_corrupt() {
        assert_eq!(single_sequence(&[4, 5], "db", &session()).unwrap(), 4);
        let error = single_sequence(&[], "db", &session()).unwrap_err();
        assert!(
            error.to_string().contains("no sequence returned"),
            "{error}"
        );
    }
}
