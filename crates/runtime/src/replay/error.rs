//! Why a replay did not happen or stopped.

use oxydra_memory::MemoryError;
use oxydra_tools::ToolError;
use oxydra_types::SessionId;

use crate::error::RuntimeError;

/// A replay that failed. Differences between the runs are no failure: they are in the
/// [`super::ReplayReport`].
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The session has no turn to start from.
    #[error("session {session} has no turn {from} to replay from (it has {turns})")]
    NoTurn {
        /// The session.
        session: SessionId,
        /// The turn asked for.
        from: u64,
        /// How many turns it has.
        turns: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The tools could not be wrapped.
    #[error(transparent)]
    Tools(#[from] ToolError),
    /// A replayed turn's run failed (what it did before is stored in the new session).
    #[error("replaying turn {turn} into session {session}: {source}")]
    Run {
        /// The turn, from 1.
        turn: u64,
        /// The new session.
        session: SessionId,
        /// Why.
        source: Box<RuntimeError>,
    },
}

impl ReplayError {
    /// The runtime's error of a failed turn, if that is what this is.
    pub fn run_error(&self) -> Option<&RuntimeError> {
        match self {
            Self::Run { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
