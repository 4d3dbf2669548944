//! How messages are stored, written once for every backend: each message is one JSON
//! document (`payload`) beside its sequence and creation time, and reading a row back
//! either gives the [`StoredMessage`] or names the corrupt record.

use oxydra_types::{Message, SessionId};

use crate::error::MemoryError;
use crate::traits::StoredMessage;

/// The payloads of `messages`, in order, for session `session` of the database at
/// `location` (named if a message cannot be encoded).
pub fn encode_messages(
    messages: &[Message],
    location: &str,
    session: &SessionId,
) -> Result<Vec<String>, MemoryError> {
    messages
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| MemoryError::Corrupt {
            location: location.to_owned(),
            what: format!("new message of session {session}"),
            message: error.to_string(),
        })
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
        let payloads = encode_messages(&messages, "db", &session()).unwrap();
        assert_eq!(payloads.len(), 2);
        for (n, (payload, message)) in payloads.iter().zip(&messages).enumerate() {
            let stored =
                decode_message(n as i64 + 1, payload.as_bytes(), 99, "db", &session()).unwrap();
            assert_eq!(&stored.message, message);
            assert_eq!((stored.sequence, stored.created_at_ms), (n as u64 + 1, 99));
        }
        assert!(encode_messages(&[], "db", &session()).unwrap().is_empty());
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
        let payload = encode_messages(&[Message::user("a")], "db", &session()).unwrap();
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
