//! Hybrid retrieval, backend-neutral: turning a query into full-text terms, the
//! in-memory vector cache, merging BM25 and cosine hits, the search plan every backend
//! follows and how chunks are embedded and their vectors encoded. No storage here: a
//! backend finds the candidates (full-text hits, stored vectors) and these functions
//! rank them.

mod chunk_codec;
mod fts_query;
mod merge;
mod plan;
mod vector_index;

pub use chunk_codec::{NewChunk, decode_vector, embed_chunks, encode_vector};
pub use fts_query::{match_expression, query_terms, terms_expression};
pub use merge::merge;
pub use plan::{SearchPlan, choose_terms, retrieved_chunks};
pub use vector_index::VectorIndex;

use crate::config::RetrievalConfig;

/// How many candidates each list (full-text, vector) contributes before merging, for a
/// search of `top_k` results: four times `top_k`, at least `min_candidates`.
pub fn candidate_count(top_k: usize, settings: &RetrievalConfig) -> usize {
    top_k.saturating_mul(4).max(settings.min_candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_four_per_result_with_a_floor() {
        let settings = RetrievalConfig::default();
        assert_eq!(candidate_count(3, &settings), 50);
        assert_eq!(candidate_count(100, &settings), 400);
        assert_eq!(candidate_count(usize::MAX, &settings), usize::MAX);
    }
}
