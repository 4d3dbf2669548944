//! The context a tool call runs in.

use std::path::{Path, PathBuf};

use oxydra_types::CallId;
use tokio_util::sync::CancellationToken;

/// What a tool knows about the call it is serving.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Root directory of the file tools; paths are resolved inside it.
    pub workspace_root: PathBuf,
    /// Fires when the call must stop (session cancelled or timed out).
    pub cancel: CancellationToken,
    /// The id of the call being served.
    pub call_id: CallId,
}

impl ToolContext {
    /// A context for call `call_id` in `workspace_root`.
    pub fn new(
        workspace_root: impl Into<PathBuf>,
        cancel: CancellationToken,
        call_id: CallId,
    ) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            cancel,
            call_id,
        }
    }

    /// The workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace_root
    }
}
