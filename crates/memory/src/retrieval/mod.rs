//! Hybrid retrieval, backend-neutral: turning a query into full-text terms, the
//! in-memory vector cache, and merging BM25 and cosine hits. No storage here: a backend
//! finds the candidates (full-text hits, stored vectors) and these functions rank them.

mod fts_query;
mod merge;
mod vector_index;

pub use fts_query::{match_expression, query_terms, terms_expression};
pub use merge::merge;
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
