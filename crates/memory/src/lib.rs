//! Session memory for Oxydra agents.
//!
//! `oxydra-memory` owns the [`Memory`] trait (sessions, write-through message storage
//! with sequence numbers, crash restore, the rolling summary with an epoch
//! compare-and-swap) and the [`MemoryRetrieval`] trait (chunks of text searched by
//! full text and by vectors).

mod error;
mod traits;

pub use error::MemoryError;
pub use traits::{
    Memory, MemoryRetrieval, RetrievedChunk, SearchScope, SessionInfo, SessionSummary,
    StoredMessage,
};
