//! A session's checkpoints as data, for an API or a view: per turn, each changed
//! path with what kind of change it was and, for a text file that still holds the
//! turn's result, a diff summary (lines added and removed) and the diff itself (cut to
//! a size).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use oxydra_types::{Checkpoint, CheckpointEntry, EntryState, NotCaptured};
use serde::{Deserialize, Serialize};

use crate::checkpoint_diff::entry_diff;

/// Bytes of one path's diff kept at most; a longer one is cut at a line and marked.
pub const PATH_DIFF_BYTES: usize = 16 * 1024;

/// What kind of change a path had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Nothing was there before.
    Added,
    /// Nothing is there after.
    Deleted,
    /// The content (or a symlink's target) changed.
    Modified,
    /// Only the permission bits changed.
    ModeChanged,
    /// A path of one kind became another (a file became a directory, …).
    TypeChanged,
}

impl ChangeKind {
    /// The kind of `entry`'s change.
    pub fn of(entry: &CheckpointEntry) -> Self {
        match (&entry.before, &entry.after) {
            (EntryState::Absent, _) => Self::Added,
            (_, EntryState::Absent) => Self::Deleted,
            (EntryState::File { hash: a, .. }, EntryState::File { hash: b, .. }) if a == b => {
                Self::ModeChanged
            }
            (EntryState::File { .. }, EntryState::File { .. })
            | (EntryState::Symlink { .. }, EntryState::Symlink { .. }) => Self::Modified,
            (EntryState::Dir { .. }, EntryState::Dir { .. }) => Self::ModeChanged,
            _ => Self::TypeChanged,
        }
    }
}

/// One path a turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathChange {
    /// The path, relative to the workspace root.
    pub path: String,
    /// What kind of change.
    pub kind: ChangeKind,
    /// Its state before the turn.
    pub before: EntryState,
    /// Its state after the turn.
    pub after: EntryState,
    /// For a text file that still holds the turn's result: lines the turn added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_added: Option<u64>,
    /// For such a file: lines the turn removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_removed: Option<u64>,
    /// For such a file: the unified diff from before the turn to now, at most
    /// [`PATH_DIFF_BYTES`] (cut at a line, `diff_truncated` then set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Whether `diff` was cut.
    #[serde(default)]
    pub diff_truncated: bool,
}

/// What one turn changed, from its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnChanges {
    /// The turn (from 1).
    pub turn: u64,
    /// Whether the turn was undone (or reverted): the paths are then the undo's own
    /// change, which undoing again takes back.
    pub undone: bool,
    /// When the checkpoint was recorded, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// The changed paths, parents before children.
    pub paths: Vec<PathChange>,
    /// Changed paths whose content before was not kept (over the size cap, holding
    /// a secret, or not put back by a restore that stopped part way): an undo cannot
    /// bring them back.
    pub not_captured: Vec<NotCaptured>,
    /// Tools called in the turn whose effects cannot be undone (a `web_fetch` that
    /// was not a GET, an MCP tool), by name.
    pub irreversible: Vec<String>,
}

/// `diff` cut to [`PATH_DIFF_BYTES`] at a line end, and whether it was cut.
fn capped(diff: String) -> (String, bool) {
    if diff.len() <= PATH_DIFF_BYTES {
        return (diff, false);
    }
    let cut = diff
        .get(..PATH_DIFF_BYTES)
        .and_then(|head| head.rfind('\n'))
        .map_or(0, |end| end + 1);
    (diff.get(..cut).unwrap_or_default().to_owned(), true)
}

/// `checkpoint`'s changes. Blocking: it reads the files to diff them.
pub(crate) fn turn_changes(
    checkpoint: &Checkpoint,
    blobs: &BTreeMap<String, Arc<Vec<u8>>>,
) -> TurnChanges {
    let root = Path::new(&checkpoint.workspace);
    let paths = checkpoint
        .entries
        .iter()
        .map(|entry| {
            let diff = entry_diff(entry, root, blobs);
            let (lines_added, lines_removed) = diff
                .as_ref()
                .map_or((None, None), |d| (Some(d.added), Some(d.removed)));
            let (diff, diff_truncated) = match diff {
                Some(d) => {
                    let (text, cut) = capped(d.unified);
                    (Some(text), cut)
                }
                None => (None, false),
            };
            PathChange {
                path: entry.path.clone(),
                kind: ChangeKind::of(entry),
                before: entry.before.clone(),
                after: entry.after.clone(),
                lines_added,
                lines_removed,
                diff,
                diff_truncated,
            }
        })
        .collect();
    TurnChanges {
        turn: checkpoint.turn,
        undone: checkpoint.undone,
        created_at_ms: checkpoint.created_at_ms,
        paths,
        not_captured: checkpoint.not_captured.clone(),
        irreversible: checkpoint.irreversible.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: &str, mode: u32) -> EntryState {
        EntryState::File {
            hash: hash.into(),
            size: 1,
            mode,
        }
    }

    #[test]
    fn kinds_follow_the_states() {
        let entry = |before, after| CheckpointEntry {
            path: "a".into(),
            before,
            after,
        };
        let kind = |before, after| ChangeKind::of(&entry(before, after));
        assert_eq!(
            kind(EntryState::Absent, file("h", 0o644)),
            ChangeKind::Added
        );
        assert_eq!(
            kind(file("h", 0o644), EntryState::Absent),
            ChangeKind::Deleted
        );
        assert_eq!(
            kind(file("h", 0o644), file("i", 0o644)),
            ChangeKind::Modified
        );
        assert_eq!(
            kind(file("h", 0o644), file("h", 0o755)),
            ChangeKind::ModeChanged
        );
        assert_eq!(
            kind(file("h", 0o644), EntryState::Dir { mode: 0o755 }),
            ChangeKind::TypeChanged
        );
        let link = |target: &str| EntryState::Symlink {
            target: target.into(),
        };
        assert_eq!(kind(link("x"), link("y")), ChangeKind::Modified);
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line() {
        let line = "+0123456789abcdef\n";
        let long = line.repeat(PATH_DIFF_BYTES / line.len() + 10);
        let (cut, truncated) = capped(long);
        assert!(truncated);
        assert!(
            cut.len() <= PATH_DIFF_BYTES && cut.ends_with('\n'),
            "{}",
            cut.len()
        );
        assert_eq!(capped("+a\n".into()), ("+a\n".to_owned(), false));
    }

    #[test]
    fn a_text_file_still_holding_the_turn_s_result_gets_counts_and_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "one\nTWO\nthree\n").unwrap();
        std::fs::write(root.join("b.txt"), "changed since\n").unwrap();
        let old = b"one\ntwo\n".to_vec();
        let old_hash = oxydra_tools::checkpoint::content_hash(&old);
        let now_hash = oxydra_tools::checkpoint::content_hash(b"one\nTWO\nthree\n");
        let checkpoint = Checkpoint {
            turn: 2,
            workspace: root.to_string_lossy().into_owned(),
            entries: vec![
                CheckpointEntry {
                    path: "a.txt".into(),
                    before: file(&old_hash, 0o644),
                    after: file(&now_hash, 0o644),
                },
                CheckpointEntry {
                    path: "b.txt".into(),
                    before: EntryState::Absent,
                    after: file("not-what-is-there", 0o644),
                },
            ],
            ..Checkpoint::default()
        };
        let blobs = BTreeMap::from([(old_hash, Arc::new(old))]);
        let changes = turn_changes(&checkpoint, &blobs);
        assert_eq!(changes.turn, 2);
        let a = &changes.paths[0];
        assert_eq!(
            (a.kind, a.lines_added, a.lines_removed),
            (ChangeKind::Modified, Some(2), Some(1))
        );
        assert!(a.diff.as_deref().unwrap().contains("+TWO"), "{a:?}");
        // Changed since by someone else: no diff is the turn's.
        let b = &changes.paths[1];
        assert_eq!((b.kind, &b.diff), (ChangeKind::Added, &None));
    }
}
