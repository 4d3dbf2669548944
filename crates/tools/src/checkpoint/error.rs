//! Why a restore was refused or failed.

use super::capture::Captured;
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
    /// Some paths were put back and others could not be (a file operation failed
    /// after writing began): both are named. The same restore may be run again once
    /// the cause is fixed (paths already put back are no conflict); `inverse` is what
    /// the restore did to the paths it put back, as a change of its own (stored as a
    /// checkpoint, it lets that part be undone).
    #[error(
        "the restore was partial: put back {}; NOT put back: {}",
        if restored.is_empty() { "nothing".to_owned() } else { restored.join(", ") },
        failed.iter().map(|f| format!("{} ({})", f.path, f.error)).collect::<Vec<_>>().join(", ")
    )]
    Partial {
        /// The paths put back.
        restored: Vec<String>,
        /// The paths not put back, with why.
        failed: Vec<NotRestored>,
        /// The restore of the paths put back, as a change of its own (before: what
        /// it replaced, with those contents; after: what it wrote).
        inverse: Box<Captured>,
    },
    /// A file operation failed before anything was written.
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

/// A path a partial restore did not put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRestored {
    /// The path.
    pub path: String,
    /// Why, as text.
    pub error: String,
}
