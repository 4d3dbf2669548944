//! [`PersonView`]: where a person's views of the coordinator read — the workspace the
//! file tools write in (for the diffs approvals show) and the memory runs talk in (for
//! transcripts).

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_memory::Memory;

/// Where a person's views read.
#[derive(Clone, Default)]
pub(crate) struct PersonView {
    pub(crate) workspace_root: Option<PathBuf>,
    pub(crate) memory: Option<Arc<dyn Memory>>,
}

impl PersonView {
    /// A view of `workspace_root` and `memory`.
    pub(crate) fn new(workspace_root: PathBuf, memory: Option<Arc<dyn Memory>>) -> Self {
        Self {
            workspace_root: Some(workspace_root),
            memory,
        }
    }
}
