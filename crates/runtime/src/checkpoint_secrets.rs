//! No secret reaches the database through a checkpoint (DESIGN.md §4): a content a
//! checkpoint would store whose bytes hold text the scrubber redacts (checked as
//! [`crate::media_guard::secret_kinds`] checks a part) is not stored, and the paths
//! that needed it are named as not captured, with the reason, as a file over the size
//! cap is. An undo then leaves them as they are and says so.

use oxydra_memory::CheckpointBlob;
use oxydra_scrubbing::Scrubber;
use oxydra_types::{Checkpoint, NotCaptured};

use crate::media_guard::{Withheld, secret_kinds};

/// The contents `held` (by hash) as the store takes them.
pub(crate) fn stored_blobs(
    held: &std::collections::BTreeMap<String, std::sync::Arc<Vec<u8>>>,
) -> Vec<CheckpointBlob> {
    held.iter()
        .map(|(hash, content)| CheckpointBlob {
            hash: hash.clone(),
            content: content.as_ref().clone(),
        })
        .collect()
}

/// `checkpoint` and `blobs` without the contents that hold a secret: their blobs are
/// dropped, and each entry whose state before was such a content becomes a
/// [`NotCaptured`] with the reason. Blocking work (a scrub of every content): call it
/// off the async threads.
pub(crate) fn withhold_secrets(
    checkpoint: &mut Checkpoint,
    blobs: &mut Vec<CheckpointBlob>,
    scrubber: &Scrubber,
) {
    let mut withheld: Vec<(String, String)> = Vec::new();
    blobs.retain(|blob| {
        let reason = match secret_kinds(&blob.content, scrubber) {
            Ok(kinds) if kinds.is_empty() => return true,
            Ok(kinds) => format!("holds text that looks like a secret ({})", kinds.join(", ")),
            Err(Withheld::Unreadable | Withheld::SecretInBytes(_) | Withheld::ModelMade(_)) => {
                "its content could not be checked for secrets".to_owned()
            }
        };
        withheld.push((blob.hash.clone(), reason));
        false
    });
    if withheld.is_empty() {
        return;
    }
    let reason_of = |hash: Option<&str>| {
        hash.and_then(|hash| {
            withheld
                .iter()
                .find(|(withheld, _)| withheld == hash)
                .map(|(_, reason)| reason.clone())
        })
    };
    let mut kept = Vec::with_capacity(checkpoint.entries.len());
    for entry in std::mem::take(&mut checkpoint.entries) {
        match reason_of(entry.before.hash()) {
            Some(reason) => checkpoint.not_captured.push(NotCaptured {
                path: entry.path,
                bytes: match entry.before {
                    oxydra_types::EntryState::File { size, .. } => size,
                    _ => 0,
                },
                reason: Some(reason),
            }),
            None => kept.push(entry),
        }
    }
    checkpoint.entries = kept;
}

#[cfg(test)]
mod tests {
    use oxydra_types::{CheckpointEntry, EntryState};

    use super::*;

    fn file(hash: &str, size: u64) -> EntryState {
        EntryState::File {
            hash: hash.to_owned(),
            size,
            mode: 0o644,
        }
    }

    #[test]
    fn a_content_holding_a_secret_is_not_stored_and_its_path_is_named() {
        let secret = b"OPENAI_API_KEY=sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kSa1b2c3d4\n".to_vec();
        let plain = b"fn main() { println!(\"hello\"); }\n".to_vec();
        let mut checkpoint = Checkpoint {
            turn: 1,
            workspace: "/w".into(),
            entries: vec![
                CheckpointEntry {
                    path: ".env".into(),
                    before: file("s", 64),
                    after: EntryState::Absent,
                },
                CheckpointEntry {
                    path: "main.rs".into(),
                    before: file("p", 34),
                    after: EntryState::Absent,
                },
                CheckpointEntry {
                    path: "new.txt".into(),
                    before: EntryState::Absent,
                    after: file("x", 1),
                },
            ],
            ..Checkpoint::default()
        };
        let mut blobs = vec![
            CheckpointBlob {
                hash: "s".into(),
                content: secret,
            },
            CheckpointBlob {
                hash: "p".into(),
                content: plain,
            },
        ];
        withhold_secrets(&mut checkpoint, &mut blobs, &Scrubber::default());
        assert_eq!(blobs.len(), 1);
        assert_eq!(blobs[0].hash, "p");
        let paths: Vec<&str> = checkpoint.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["main.rs", "new.txt"]);
        assert_eq!(checkpoint.not_captured.len(), 1);
        assert_eq!(checkpoint.not_captured[0].path, ".env");
        assert_eq!(checkpoint.not_captured[0].bytes, 64);
        assert!(
            checkpoint.not_captured[0]
                .why()
                .contains("looks like a secret"),
            "{:?}",
            checkpoint.not_captured[0]
        );
    }
}
