//! Checkpoints: what one turn changed in the workspace, with the state each changed
//! path had before it (content by hash) and after it, so that the turn can be undone
//! and a later change by someone else noticed before an undo overwrites it.

use serde::{Deserialize, Serialize};

/// The state of one path of the workspace at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryState {
    /// Nothing at the path.
    Absent,
    /// A regular file: its content's hash (lowercase hex SHA-256), size and mode bits.
    File {
        /// SHA-256 of the content, lowercase hex.
        hash: String,
        /// Size in bytes.
        size: u64,
        /// Permission bits (`0o7777` at most).
        mode: u32,
    },
    /// A directory with its permission bits.
    Dir {
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link and the target it names (never followed).
    Symlink {
        /// The link's target, as stored in the link.
        target: String,
    },
    /// Something that is neither (a FIFO, a socket, a device): never captured nor
    /// restored.
    Other,
}

impl EntryState {
    /// The content hash, for a file.
    pub fn hash(&self) -> Option<&str> {
        match self {
            Self::File { hash, .. } => Some(hash),
            _ => None,
        }
    }

    /// A few words for listings: `absent`, `file 12 B 644`, `dir 755`, `symlink -> t`.
    pub fn describe(&self) -> String {
        match self {
            Self::Absent => "absent".to_owned(),
            Self::File { size, mode, .. } => format!("file {size} B {mode:o}"),
            Self::Dir { mode } => format!("dir {mode:o}"),
            Self::Symlink { target } => format!("symlink -> {target}"),
            Self::Other => "special file".to_owned(),
        }
    }
}

/// One path a turn changed: relative to the workspace root, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointEntry {
    /// The path, relative to the workspace root.
    pub path: String,
    /// What was there before the turn.
    pub before: EntryState,
    /// What was there after it.
    pub after: EntryState,
}

/// A changed path whose content before the turn was not kept (it did not fit the
/// checkpoint's size cap, or it holds a secret, which is never stored): an undo
/// cannot bring it back and says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotCaptured {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Its size before the turn, in bytes.
    pub bytes: u64,
    /// Why, when it is not the size cap (`holds a secret (openai_key)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl NotCaptured {
    /// Why it was not kept, in a few words: its reason, else the size cap.
    pub fn why(&self) -> &str {
        self.reason
            .as_deref()
            .unwrap_or("over the checkpoint size cap")
    }
}

/// What one turn of a session changed in its workspace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The turn: the ordinal (from 1) of the user message that started it.
    pub turn: u64,
    /// The workspace root, absolute.
    pub workspace: String,
    /// The conversation's last message sequence before the turn: rewinding to the turn
    /// keeps the messages up to and including it.
    pub messages_before: u64,
    /// The changed paths, parents before children.
    pub entries: Vec<CheckpointEntry>,
    /// Changed paths whose before-content was not kept.
    pub not_captured: Vec<NotCaptured>,
    /// Calls of the turn whose effects cannot be undone (a `web_fetch` that was not a
    /// GET, an MCP tool), by tool name.
    pub irreversible: Vec<String>,
    /// When it was recorded, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Whether the turn was undone: the entries are then the undo's own change (before:
    /// the turn's result; after: the state before the turn), so undoing it again
    /// brings the turn's changes back.
    #[serde(default)]
    pub undone: bool,
}

impl Checkpoint {
    /// Whether the turn changed nothing the checkpoint knows of.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.not_captured.is_empty() && self.irreversible.is_empty()
    }

    /// The hashes of the contents the checkpoint needs to undo its turn.
    pub fn before_hashes(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().filter_map(|entry| entry.before.hash())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_json() {
        let checkpoint = Checkpoint {
            turn: 2,
            entries: vec![CheckpointEntry {
                path: "a.txt".into(),
                before: EntryState::File {
                    hash: "ab".into(),
                    size: 3,
                    mode: 0o644,
                },
                after: EntryState::Absent,
            }],
            ..Checkpoint::default()
        };
        let json = serde_json::to_string(&checkpoint).unwrap();
        assert!(json.contains(r#""kind":"file""#), "{json}");
        let back: Checkpoint = serde_json::from_str(&json).unwrap();
        assert_eq!(back, checkpoint);
        assert_eq!(back.before_hashes().collect::<Vec<_>>(), ["ab"]);
        assert_eq!(back.entries[0].before.describe(), "file 3 B 644");
    }
}
