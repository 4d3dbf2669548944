//! How much a checkpoint keeps, and how many are kept.

use serde::{Deserialize, Serialize};

/// The `[checkpoints]` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Whether turns record checkpoints (default: yes).
    pub enabled: bool,
    /// Bytes of file content a scan holds, and so the most a checkpoint can keep
    /// (default 64 MiB). A changed file beyond it is named as not captured.
    pub max_bytes: u64,
    /// Checkpoints kept per session, the newest (default 50).
    pub keep_last: usize,
}

/// 64 MiB.
const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            keep_last: 50,
        }
    }
}
