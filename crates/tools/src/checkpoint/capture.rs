//! What changed between two scans: each changed path with its state before (content
//! by hash, the content kept when the scan held it) and after.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use oxydra_types::{CheckpointEntry, EntryState, NotCaptured};

use super::scan::{Scanned, Snapshot, content_hash, hash_now};

/// What one call (or one turn) changed.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The changed paths, parents before children.
    pub entries: Vec<CheckpointEntry>,
    /// Changed files whose content before was not held (over the size cap).
    pub not_captured: Vec<NotCaptured>,
    /// The before-contents the entries name, by hash.
    pub blobs: BTreeMap<String, Arc<Vec<u8>>>,
}

impl Captured {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.not_captured.is_empty()
    }

    /// Folds `later` (what a later call of the same turn changed) into `self`: a path
    /// keeps its first before-state and takes the later after-state; a path that ends
    /// as it began is dropped.
    pub fn merge(&mut self, later: Captured) {
        let mut by_path: BTreeMap<String, CheckpointEntry> = self
            .entries
            .drain(..)
            .map(|entry| (entry.path.clone(), entry))
            .collect();
        for entry in later.entries {
            match by_path.get_mut(&entry.path) {
                Some(known) => known.after = entry.after,
                None => {
                    if !self.not_captured.iter().any(|n| n.path == entry.path) {
                        if let Some(hash) = entry.before.hash()
                            && let Some(blob) = later.blobs.get(hash)
                        {
                            self.blobs.insert(hash.to_owned(), blob.clone());
                        }
                        by_path.insert(entry.path.clone(), entry);
                    }
                }
            }
        }
        for missing in later.not_captured {
            if !by_path.contains_key(&missing.path)
                && !self.not_captured.iter().any(|n| n.path == missing.path)
            {
                self.not_captured.push(missing);
            }
        }
        by_path.retain(|_, entry| entry.before != entry.after);
        self.entries = by_path.into_values().collect();
        let needed: BTreeSet<String> = self
            .entries
            .iter()
            .filter_map(|entry| entry.before.hash().map(str::to_owned))
            .collect();
        self.blobs.retain(|hash, _| needed.contains(hash));
    }
}

/// The state an entry had, with a file's hash computed from its held content;
/// `None` for a file whose content was not held.
fn known_state(entry: &Scanned) -> Option<EntryState> {
    match &entry.state {
        EntryState::File { hash, size, mode } if hash.is_empty() => {
            let content = entry.content.as_ref()?;
            Some(EntryState::File {
                hash: content_hash(content),
                size: *size,
                mode: *mode,
            })
        }
        other => Some(other.clone()),
    }
}

/// What changed from `before` to `after` (both scans of the same root; `after` taken
/// with `before` as its previous scan, so an unchanged entry is the same in both).
/// Blocking: a changed file the scan did not hold is read for its hash.
pub fn changes(root: &Path, before: &Snapshot, after: &Snapshot) -> Captured {
    let mut captured = Captured::default();
    let paths: BTreeSet<&String> = before.entries.keys().chain(after.entries.keys()).collect();
    for path in paths {
        let old = before.entries.get(path.as_str());
        let new = after.entries.get(path.as_str());
        if same_stat(old, new) {
            continue;
        }
        let after_state = match new.map(known_state) {
            None => EntryState::Absent,
            Some(Some(state)) => state,
            // Not held after: its hash is read now.
            Some(None) => match new.map(|n| &n.state) {
                Some(EntryState::File { size, mode, .. }) => EntryState::File {
                    hash: hash_now(&root.join(path.as_str())),
                    size: *size,
                    mode: *mode,
                },
                _ => EntryState::Absent,
            },
        };
        let before_state = match old {
            None => EntryState::Absent,
            // A file's content before must be held for the turn to be undone.
            Some(scanned) => match known_state(scanned).filter(|state| {
                !matches!(state, EntryState::File { .. }) || scanned.content.is_some()
            }) {
                Some(state) => state,
                None => {
                    captured.not_captured.push(NotCaptured {
                        path: path.clone(),
                        bytes: scanned.size(),
                        reason: None,
                    });
                    continue;
                }
            },
        };
        if before_state == after_state {
            continue;
        }
        if let (EntryState::Dir { mode: a }, EntryState::Dir { mode: b }) =
            (&before_state, &after_state)
            && a == b
        {
            continue;
        }
        if let (Some(hash), Some(content)) =
            (before_state.hash(), old.and_then(|o| o.content.clone()))
        {
            captured.blobs.insert(hash.to_owned(), content);
        }
        captured.entries.push(CheckpointEntry {
            path: path.clone(),
            before: before_state,
            after: after_state,
        });
    }
    captured
}

fn same_stat(old: Option<&Scanned>, new: Option<&Scanned>) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => old.same_stat(new),
        _ => false,
    }
}
