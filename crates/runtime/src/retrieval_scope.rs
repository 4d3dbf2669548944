//! Where retrieval searches for snippets: the running session's chunks, or every
//! stored chunk.

use oxydra_memory::SearchScope;
use oxydra_types::SessionId;

/// Where retrieval searches for snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetrievalScope {
    /// Only the chunks of the running session (default): what it said earlier that no
    /// longer sits in the context verbatim.
    #[default]
    Session,
    /// Every stored chunk, so later sessions also find what earlier ones said.
    Global,
}

impl RetrievalScope {
    pub(crate) fn for_session(self, session_id: &SessionId) -> SearchScope {
        match self {
            Self::Global => SearchScope::Global,
            Self::Session => SearchScope::Session(session_id.clone()),
        }
    }
}
