//! [`PersonView`]: where a person's views of the coordinator read — the workspace the
//! file tools write in (for the diffs approvals show), the memory runs talk in (for
//! transcripts) and the checkpoints runs record (for their changes and reverts).

use std::path::PathBuf;
use std::sync::Arc;

use oxydra_memory::Memory;

/// Where a person's views read.
#[derive(Clone, Default)]
pub(crate) struct PersonView {
    pub(crate) workspace_root: Option<PathBuf>,
    pub(crate) memory: Option<Arc<dyn Memory>>,
    /// The runs' checkpoints (with a memory and a checkpoint store only).
    pub(crate) checkpoints: Option<oxydra_runtime::Checkpoints>,
}

impl PersonView {
    /// A view of `workspace_root`, `memory` and, with both a memory and
    /// `checkpoints`, the runs' checkpoints (undone with `scrubber` checking what a
    /// revert stores).
    pub(crate) fn new(
        workspace_root: PathBuf,
        memory: Option<Arc<dyn Memory>>,
        checkpoints: Option<&crate::RunCheckpoints>,
        scrubber: &oxydra_scrubbing::Scrubber,
    ) -> Self {
        let checkpoints = memory.as_ref().zip(checkpoints).map(|(memory, recorded)| {
            oxydra_runtime::Checkpoints::new(
                Arc::clone(&recorded.store),
                Arc::clone(memory),
                &recorded.config,
            )
            .with_scrubber(scrubber.clone())
        });
        Self {
            workspace_root: Some(workspace_root),
            memory,
            checkpoints,
        }
    }
}
