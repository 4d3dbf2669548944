#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Checkpoints: stored and listed per session, contents stored once by hash, the
//! retention, a rewind's deletions, and the conversation taken back.

use oxydra_types::{Checkpoint, CheckpointEntry, EntryState, Message, SessionId};

use super::MemoryBackend;
use crate::{CheckpointBlob, CheckpointStore, Memory, RetrievalConfig};

fn blob(text: &str) -> CheckpointBlob {
    CheckpointBlob {
        hash: format!("hash-of-{text}"),
        content: text.as_bytes().to_vec(),
    }
}

/// A checkpoint of `turn` whose one path had `content` before.
fn checkpoint(turn: u64, content: &str) -> Checkpoint {
    Checkpoint {
        turn,
        workspace: "/work/ws".into(),
        messages_before: turn * 2,
        entries: vec![
            CheckpointEntry {
                path: "src/main.rs".into(),
                before: EntryState::File {
                    hash: blob(content).hash,
                    size: content.len() as u64,
                    mode: 0o644,
                },
                after: EntryState::Absent,
            },
            CheckpointEntry {
                path: "link ✓".into(),
                before: EntryState::Symlink {
                    target: "../elsewhere".into(),
                },
                after: EntryState::Dir { mode: 0o755 },
            },
        ],
        irreversible: vec!["web_fetch".into()],
        created_at_ms: 1_700_000_000_000 + turn as i64,
        ..Checkpoint::default()
    }
}

/// Checkpoints read back as stored, oldest turn first, from another store too; a
/// content shared by two checkpoints is stored once and read back by hash; the same
/// turn stored again replaces the first.
pub async fn checkpoints_round_trip_by_session_and_turn<B: MemoryBackend>(backend: &B)
where
    B::Store: CheckpointStore,
{
    let (session, other) = (SessionId::from("ses_cp"), SessionId::from("ses_other"));
    {
        let store = backend.open(RetrievalConfig::default());
        assert!(store.checkpoints(&session).await.unwrap().is_empty());
        store
            .store_checkpoint(&session, &checkpoint(2, "two"), &[blob("two")], 10)
            .await
            .unwrap();
        store
            .store_checkpoint(&session, &checkpoint(1, "one"), &[blob("one")], 10)
            .await
            .unwrap();
        store
            .store_checkpoint(&other, &checkpoint(1, "one"), &[blob("one")], 10)
            .await
            .unwrap();
    }
    let store = backend.open(RetrievalConfig::default());
    let listed = store.checkpoints(&session).await.unwrap();
    let turns: Vec<u64> = listed.iter().map(|c| c.checkpoint.turn).collect();
    assert_eq!(turns, [1, 2]);
    assert_eq!(listed[0].checkpoint, checkpoint(1, "one"));
    assert_eq!(listed[0].session_id, session);
    assert_eq!(
        store.checkpoint_blob(&blob("one").hash).await.unwrap(),
        Some(b"one".to_vec())
    );
    assert_eq!(
        store.checkpoint_blob("hash-of-nothing").await.unwrap(),
        None
    );

    let replaced = checkpoint(2, "again");
    store
        .store_checkpoint(&session, &replaced, &[blob("again")], 10)
        .await
        .unwrap();
    let listed = store.checkpoints(&session).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].checkpoint, replaced);
    assert_eq!(
        store.checkpoint_blob(&blob("two").hash).await.unwrap(),
        None
    );
}

/// Only the newest `keep_last` checkpoints of a session stay, with the contents they
/// need; a content another session still needs stays too.
pub async fn retention_keeps_the_newest_and_their_contents<B: MemoryBackend>(backend: &B)
where
    B::Store: CheckpointStore,
{
    let (session, other) = (SessionId::from("ses_keep"), SessionId::from("ses_keep2"));
    let store = backend.open(RetrievalConfig::default());
    store
        .store_checkpoint(&other, &checkpoint(1, "t1"), &[blob("t1")], 2)
        .await
        .unwrap();
    for turn in 1..=4 {
        let text = format!("t{turn}");
        store
            .store_checkpoint(&session, &checkpoint(turn, &text), &[blob(&text)], 2)
            .await
            .unwrap();
    }
    let turns: Vec<u64> = store
        .checkpoints(&session)
        .await
        .unwrap()
        .iter()
        .map(|c| c.checkpoint.turn)
        .collect();
    assert_eq!(turns, [3, 4]);
    assert_eq!(store.checkpoint_blob(&blob("t2").hash).await.unwrap(), None);
    assert!(
        store
            .checkpoint_blob(&blob("t1").hash)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .checkpoint_blob(&blob("t4").hash)
            .await
            .unwrap()
            .is_some()
    );
}

/// A rewind deletes the checkpoints from its turn on, and the conversation after the
/// kept message: the next message takes the next sequence number; deleting the
/// session deletes its checkpoints.
pub async fn a_rewind_deletes_later_checkpoints_and_messages<B: MemoryBackend>(backend: &B)
where
    B::Store: CheckpointStore,
{
    let session = SessionId::from("ses_rewind");
    let store = backend.open(RetrievalConfig::default());
    for n in 1..=5 {
        store
            .append(&session, &Message::user(format!("m{n}")))
            .await
            .unwrap();
    }
    for turn in 1..=3 {
        let text = format!("r{turn}");
        store
            .store_checkpoint(&session, &checkpoint(turn, &text), &[blob(&text)], 10)
            .await
            .unwrap();
    }
    store.delete_checkpoints_from(&session, 2).await.unwrap();
    let left = store.checkpoints(&session).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].checkpoint.turn, 1);
    assert_eq!(store.checkpoint_blob(&blob("r3").hash).await.unwrap(), None);

    store.truncate_messages(&session, 2).await.unwrap();
    let messages = store.messages(&session).await.unwrap();
    let texts: Vec<&str> = messages.iter().map(|m| m.message.text()).collect();
    assert_eq!(texts, ["m1", "m2"]);
    let next = store
        .append(&session, &Message::user("after"))
        .await
        .unwrap();
    assert_eq!(next, 3);

    store.delete_session(&session).await.unwrap();
    assert!(store.checkpoints(&session).await.unwrap().is_empty());
    assert_eq!(store.checkpoint_blob(&blob("r1").hash).await.unwrap(), None);
}

/// Expands one `#[tokio::test]` per checkpoint conformance case, for a backend whose
/// store is also a [`CheckpointStore`].
#[macro_export]
macro_rules! checkpoint_conformance_tests {
    ($backend:expr) => {
        $crate::memory_conformance_tests!(@cases $backend;
            checkpoints_round_trip_by_session_and_turn,
            retention_keeps_the_newest_and_their_contents,
            a_rewind_deletes_later_checkpoints_and_messages,
        );
    };
}
