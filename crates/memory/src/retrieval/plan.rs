//! The parts of a search every backend shares: what to look for before any storage is
//! read ([`SearchPlan`]), which query terms are worth a full-text search
//! ([`choose_terms`]), and the ranked results put together ([`retrieved_chunks`]).
//! A backend only finds the candidates: full-text hits for the plan's terms and vector
//! hits for its vector.

use oxydra_types::SessionId;

use super::fts_query::query_terms;
use super::merge::merge;
use crate::config::RetrievalConfig;
use crate::embedder::{Embedder, embed_query};
use crate::error::MemoryError;
use crate::traits::{RetrievedChunk, SearchScope};

/// One search, decided before storage is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPlan {
    /// The session searched; `None` searches every chunk.
    pub session: Option<SessionId>,
    /// How many candidates each list (full-text, vector) contributes before merging.
    pub candidates: usize,
    /// The query's full-text terms, when full-text hits count (their weight is above
    /// zero); `None` when the backend need not search text.
    pub terms: Option<Vec<String>>,
    /// The query's unit vector, when vector hits count; `None` when the backend need
    /// not search vectors.
    pub vector: Option<Vec<f32>>,
    top_k: usize,
    vector_weight: f32,
    text_weight: f32,
}

impl SearchPlan {
    /// The plan for `query` in `scope` asking `top_k` results, its vector from
    /// `embedder` when vectors count; `None` when nothing can be found (`top_k` is 0
    /// or the query is blank), so the backend returns no result without reading.
    pub async fn new(
        query: &str,
        scope: &SearchScope,
        top_k: usize,
        settings: &RetrievalConfig,
        embedder: &dyn Embedder,
    ) -> Result<Option<Self>, MemoryError> {
        let Some(mut plan) = Self::without_vector(query, scope, top_k, settings) else {
            return Ok(None);
        };
        if settings.vector_weight > 0.0 {
            plan.vector = Some(embed_query(embedder, query).await?);
        }
        Ok(Some(plan))
    }

    /// The plan as [`new`](Self::new) makes it, before the query is embedded
    /// (`vector` is `None`).
    pub fn without_vector(
        query: &str,
        scope: &SearchScope,
        top_k: usize,
        settings: &RetrievalConfig,
    ) -> Option<Self> {
        if top_k == 0 || query.trim().is_empty() {
            return None;
        }
        Some(Self {
            session: match scope {
                SearchScope::Session(id) => Some(id.clone()),
                SearchScope::Global => None,
            },
            candidates: super::candidate_count(top_k, settings),
            terms: (settings.text_weight > 0.0).then(|| query_terms(query)),
            vector: None,
            top_k,
            vector_weight: settings.vector_weight,
            text_weight: settings.text_weight,
        })
    }

    /// The searched session's id, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(SessionId::as_str)
    }

    /// The best `top_k` chunk ids with their merged scores, best first (see
    /// [`merge`](crate::merge)).
    pub fn rank(&self, vector_hits: &[(i64, f32)], text_hits: &[(i64, f32)]) -> Vec<(i64, f32)> {
        merge(
            vector_hits,
            text_hits,
            self.vector_weight,
            self.text_weight,
            self.top_k,
        )
    }
}

/// The terms worth a full-text search, from each term's count of chunks containing it:
/// those found in at most `max_docs` chunks, in the order given; when every term is
/// more common, the rarest one (the first of the rarest); none for no terms. Ranking
/// every chunk that contains a very common word costs a scan of much of the index and
/// adds little to the ranking.
///
/// A backend that caps its counts at `max_docs + 1` (to stop counting a common word
/// early) gets the rarest term right only with full counts: it counts again when no
/// capped count is within `max_docs`.
pub fn choose_terms(counted: Vec<(String, usize)>, max_docs: usize) -> Vec<String> {
    // `min_by_key` keeps the first of equal minima.
    let rarest = counted
        .iter()
        .min_by_key(|(_, docs)| *docs)
        .map(|(term, _)| term.clone());
    let selective: Vec<String> = counted
        .into_iter()
        .filter(|(_, docs)| *docs <= max_docs)
        .map(|(term, _)| term)
        .collect();
    match (selective.is_empty(), rarest) {
        (true, Some(term)) => vec![term],
        _ => selective,
    }
}

/// The results of `ranked` (chunk id and score, best first) whose chunk `fetch` still
/// finds (its session and text), in rank order; a chunk deleted since it was ranked is
/// left out.
pub fn retrieved_chunks<E>(
    ranked: Vec<(i64, f32)>,
    mut fetch: impl FnMut(i64) -> Result<Option<(Option<String>, String)>, E>,
) -> Result<Vec<RetrievedChunk>, E> {
    let mut out = Vec::with_capacity(ranked.len());
    for (chunk_id, score) in ranked {
        if let Some((session_id, text)) = fetch(chunk_id)? {
            out.push(RetrievedChunk {
                chunk_id,
                session_id: session_id.map(SessionId::from),
                text,
                score,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedder::HashingEmbedder;

    fn settings(vector_weight: f32, text_weight: f32) -> RetrievalConfig {
        RetrievalConfig {
            vector_weight,
            text_weight,
            ..RetrievalConfig::default()
        }
    }

    #[test]
    fn a_blank_query_or_no_results_asked_plans_nothing() {
        let settings = RetrievalConfig::default();
        for (query, top_k) in [("", 3), ("   \n\t", 3), ("deploy", 0)] {
            assert!(
                SearchPlan::without_vector(query, &SearchScope::Global, top_k, &settings).is_none(),
                "{query:?} {top_k}"
            );
        }
    }

    #[test]
    fn the_plan_names_the_scope_the_candidates_and_the_lists_that_count() {
        let scope = SearchScope::Session(SessionId::from("ses_a"));
        let plan = SearchPlan::without_vector("Where is staging?", &scope, 3, &settings(0.7, 0.3))
            .unwrap();
        assert_eq!(plan.session_id(), Some("ses_a"));
        assert_eq!(plan.candidates, 50);
        assert_eq!(plan.terms, Some(query_terms("Where is staging?")));
        assert_eq!(plan.vector, None);

        let global = SearchPlan::without_vector(
            "staging",
            &SearchScope::Global,
            usize::MAX,
            &settings(1.0, 0.0),
        )
        .unwrap();
        assert_eq!(global.session_id(), None);
        assert_eq!(global.candidates, usize::MAX);
        assert_eq!(global.terms, None, "text does not count");
    }

    #[tokio::test]
    async fn the_query_is_embedded_only_when_vectors_count() {
        let embedder = HashingEmbedder::default();
        let scope = SearchScope::Global;
        let with = SearchPlan::new("staging", &scope, 3, &settings(0.7, 0.3), &embedder)
            .await
            .unwrap()
            .unwrap();
        let vector = with.vector.unwrap();
        assert_eq!(vector.len(), embedder.dimensions());
        let without = SearchPlan::new("staging", &scope, 3, &settings(0.0, 1.0), &embedder)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(without.vector, None);
        assert!(
            SearchPlan::new(" ", &scope, 3, &settings(0.7, 0.3), &embedder)
                .await
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn ranking_merges_with_the_plans_weights_and_cut() {
        let plan =
            SearchPlan::without_vector("x", &SearchScope::Global, 2, &settings(1.0, 0.0)).unwrap();
        let ranked = plan.rank(&[(1, 0.1), (2, 0.9), (3, 0.5)], &[(4, 10.0)]);
        assert_eq!(ranked.len(), 2);
        assert_eq!(ranked[0].0, 2);
        assert_eq!(
            ranked,
            merge(&[(1, 0.1), (2, 0.9), (3, 0.5)], &[(4, 10.0)], 1.0, 0.0, 2)
        );
    }

    #[test]
    fn selective_terms_are_kept_in_order_else_the_rarest() {
        let counted = |pairs: &[(&str, usize)]| {
            pairs
                .iter()
                .map(|(term, docs)| ((*term).to_owned(), *docs))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            choose_terms(counted(&[("the", 9000), ("deploy", 3), ("eu", 10)]), 100),
            ["deploy", "eu"]
        );
        // Within the cap counts as selective.
        assert_eq!(choose_terms(counted(&[("a", 100)]), 100), ["a"]);
        // Every term is common: the rarest, the first of equals.
        assert_eq!(
            choose_terms(counted(&[("the", 9000), ("a", 500), ("of", 500)]), 100),
            ["a"]
        );
        assert!(choose_terms(Vec::new(), 100).is_empty());
        // Unknown terms (no chunk) are selective.
        assert_eq!(choose_terms(counted(&[("zzz", 0)]), 0), ["zzz"]);
        assert_eq!(
            choose_terms(counted(&[("x", usize::MAX), ("y", usize::MAX)]), 0),
            ["x"]
        );
    }

    #[test]
    fn results_keep_rank_order_and_skip_chunks_gone_since() {
        let ranked = vec![(3, 0.9), (1, 0.5), (2, 0.1)];
        let found = retrieved_chunks::<()>(ranked, |id| {
            Ok(match id {
                3 => Some((Some("ses_a".to_owned()), "three".to_owned())),
                2 => Some((None, "two".to_owned())),
                _ => None,
            })
        })
        .unwrap();
        let ids: Vec<i64> = found.iter().map(|chunk| chunk.chunk_id).collect();
        assert_eq!(ids, [3, 2]);
        assert_eq!(found[0].session_id, Some(SessionId::from("ses_a")));
        assert_eq!((found[0].text.as_str(), found[0].score), ("three", 0.9));
        assert_eq!(found[1].session_id, None);
        // A fetch error stops at once.
        let mut calls = 0;
        let failed = retrieved_chunks(vec![(1, 1.0), (2, 0.5)], |_| {
            calls += 1;
            Err("gone")
        });
        assert_eq!(failed, Err("gone"));
        assert_eq!(calls, 1);
    }
}
