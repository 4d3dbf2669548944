//! A checkpoint as text: its paths, before and after, and a unified diff of each text
//! file whose content after the turn is still the file's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use oxydra_tools::checkpoint::content_hash;
use oxydra_types::{Checkpoint, CheckpointEntry, EntryState};

/// Lines of one file's diff shown at most.
const DIFF_LINES: usize = 200;

/// A text file's change from before its turn to now.
pub(crate) struct EntryDiff {
    /// The unified diff, whole.
    pub(crate) unified: String,
    /// Lines added.
    pub(crate) added: u64,
    /// Lines removed.
    pub(crate) removed: u64,
}

/// The change of `entry`'s path from its state before the turn to the file now, when
/// the path still holds the turn's result (a later change is not the turn's) and both
/// sides are text (or absent); `None` otherwise. Blocking: it reads the file.
pub(crate) fn entry_diff(
    entry: &CheckpointEntry,
    root: &Path,
    blobs: &BTreeMap<String, Arc<Vec<u8>>>,
) -> Option<EntryDiff> {
    let now = std::fs::read(root.join(&entry.path)).ok();
    let after_is_now = match (&entry.after, &now) {
        (EntryState::File { hash, .. }, Some(bytes)) => *hash == content_hash(bytes),
        (EntryState::Absent, None) => true,
        _ => false,
    };
    let before = entry.before.hash().and_then(|hash| blobs.get(hash));
    if !after_is_now || (before.is_none() && now.is_none()) {
        return None;
    }
    let old = std::str::from_utf8(before.map(|b| b.as_slice()).unwrap_or_default()).ok()?;
    let new = std::str::from_utf8(now.as_deref().unwrap_or_default()).ok()?;
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0u64, 0u64);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let unified = diff
        .unified_diff()
        .header(&format!("a/{}", entry.path), &format!("b/{}", entry.path))
        .to_string();
    Some(EntryDiff {
        unified,
        added,
        removed,
    })
}

/// `checkpoint` as text. Blocking: it reads the files to diff them.
pub(crate) fn describe(checkpoint: &Checkpoint, blobs: &BTreeMap<String, Arc<Vec<u8>>>) -> String {
    let mut text = String::new();
    let undone = if checkpoint.undone { " (undone)" } else { "" };
    let _ = writeln!(
        text,
        "turn {}{undone}: {} path(s) changed in {}",
        checkpoint.turn,
        checkpoint.entries.len(),
        checkpoint.workspace
    );
    let root = Path::new(&checkpoint.workspace);
    for entry in &checkpoint.entries {
        let mark = match (&entry.before, &entry.after) {
            (EntryState::Absent, _) => "A",
            (_, EntryState::Absent) => "D",
            _ => "M",
        };
        let _ = writeln!(
            text,
            "  {mark} {}: {} -> {}",
            entry.path,
            entry.before.describe(),
            entry.after.describe()
        );
        if let Some(diff) = entry_diff(entry, root, blobs) {
            for line in diff.unified.lines().take(DIFF_LINES) {
                let _ = writeln!(text, "    {line}");
            }
        }
    }
    for missing in &checkpoint.not_captured {
        let _ = writeln!(
            text,
            "  not captured: {}, {} bytes ({})",
            missing.path,
            missing.bytes,
            missing.why()
        );
    }
    for name in &checkpoint.irreversible {
        let _ = writeln!(text, "  cannot be undone: a `{name}` call");
    }
    text
}
