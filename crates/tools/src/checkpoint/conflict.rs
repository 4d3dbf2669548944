//! A path someone else changed since its checkpoint.

use oxydra_types::EntryState;

/// A path changed since the checkpoint by someone else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The path, relative to the workspace root.
    pub path: String,
    /// What the checkpoint recorded after its turn.
    pub expected: EntryState,
    /// What is there now.
    pub found: EntryState,
    /// A unified diff from the current text to what the restore would write, for text
    /// files (empty otherwise).
    pub diff: String,
}
