//! How retrieval ranks and chunks, for every backend.

/// How search scores are merged and texts are chunked.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalConfig {
    /// Weight of the (min-max normalised) vector cosine score; default 0.7.
    pub vector_weight: f32,
    /// Weight of the (min-max normalised) FTS5 BM25 score; default 0.3.
    pub text_weight: f32,
    /// Longest chunk, in characters; default 1,000.
    pub chunk_max_chars: usize,
    /// Characters shared by neighbouring chunks; default 200.
    pub chunk_overlap: usize,
    /// How many candidates each list contributes before merging, at least; default 50.
    pub min_candidates: usize,
    /// Query words found in more chunks than this are left out of the full-text search
    /// (unless all are, then the rarest is kept): they rank little and cost a lot;
    /// default 2,000.
    pub max_term_docs: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            vector_weight: 0.7,
            text_weight: 0.3,
            chunk_max_chars: 1000,
            chunk_overlap: 200,
            min_candidates: 50,
            max_term_docs: 2_000,
        }
    }
}
