//! Why a restore was refused or failed.

use super::conflict::Conflict;

/// A restore that did not happen, or stopped part way.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A checkpoint path that is not a plain path below the workspace: nothing was
    /// restored.
    #[error("refused to restore `{path}`: {reason}")]
    UnsafePath {
        /// The path as stored.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// Paths changed by someone else since the checkpoint: nothing was restored.
    #[error("changed since the checkpoint, not overwritten: {}", names(.0))]
    Conflicts(Vec<Conflict>),
    /// The content a path needs is not stored: nothing was restored.
    #[error("the content `{path}` had before is not stored")]
    MissingContent {
        /// The path.
        path: String,
    },
    /// A file operation failed.
    #[error("restoring `{path}`: {source}")]
    Io {
        /// The path.
        path: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

fn names(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|conflict| conflict.path.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
