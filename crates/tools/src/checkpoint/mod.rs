//! Checkpoints of the workspace: what a turn's side-effecting calls changed,
//! captured by a stat-first scan before and after each call ([`scan`],
//! [`changes`]), and put back by [`restore`], which never writes outside the
//! workspace nor through a symlink and never silently overwrites a path someone else
//! changed since.
//!
//! The scan holds file contents up to the size cap ([`CheckpointConfig::max_bytes`]):
//! a changed file whose content before did not fit is named in the checkpoint as not
//! captured, never silently lost. It skips [`SKIPPED_DIRS`].

mod capture;
mod config;
mod conflict;
mod error;
mod restore;
mod scan;

pub use capture::{Captured, changes};
pub use config::CheckpointConfig;
pub use conflict::Conflict;
pub use error::{CheckpointError, NotRestored};
pub use restore::{Restored, restore};
pub use scan::{SKIPPED_DIRS, Snapshot, content_hash, scan};

#[cfg(test)]
mod tests;
