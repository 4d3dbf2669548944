//! Hybrid retrieval: FTS5 BM25 hits and vector cosine hits, merged.

mod fts_query;
mod merge;
mod vector_index;

pub use fts_query::{match_expression, query_terms, terms_expression};
pub use merge::merge;
pub use vector_index::VectorIndex;

use async_trait::async_trait;
use oxydra_types::SessionId;
use tracing::field;

use crate::chunking::chunk_text;
use crate::embedder::normalize;
use crate::error::MemoryError;
use crate::sqlite::chunks::{self, NewChunk};
use crate::sqlite::{Inner, SqliteMemory};
use crate::traits::{MemoryRetrieval, RetrievedChunk, SearchScope};

/// How many texts go to the embedder in one call.
const EMBED_BATCH: usize = 64;

impl SqliteMemory {
    /// Embed and index `texts` as they are (no further chunking) in one transaction;
    /// returns their chunk ids in order.
    pub async fn store_chunks(
        &self,
        session: Option<&SessionId>,
        texts: Vec<String>,
    ) -> Result<Vec<i64>, MemoryError> {
        let texts: Vec<String> = texts.into_iter().filter(|t| !t.trim().is_empty()).collect();
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = &self.inner.config.embedder;
        let dims = embedder.dimensions();
        let mut new_chunks = Vec::with_capacity(texts.len());
        for batch in texts.chunks(EMBED_BATCH) {
            let vectors = embedder.embed(batch).await?;
            if vectors.len() != batch.len() {
                return Err(MemoryError::Embedding(format!(
                    "{} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for (text, mut vector) in batch.iter().zip(vectors) {
                check_dims(&vector, dims)?;
                normalize(&mut vector);
                new_chunks.push(NewChunk {
                    text: text.clone(),
                    vector,
                });
            }
        }
        let span = tracing::debug_span!(
            "memory.store_chunks",
            session_id = field::debug(session.map(SessionId::as_str)),
            chunks = new_chunks.len()
        );
        let session = session.cloned();
        let model = embedder.model();
        self.run(span, move |inner| {
            let mut conn = inner.conn();
            let ids = chunks::insert_chunks(
                &mut conn,
                &inner.path,
                session.as_ref(),
                &model,
                &new_chunks,
            )?;
            if let Some(index) = inner.index().as_mut() {
                for (id, chunk) in ids.iter().zip(&new_chunks) {
                    index.push(*id, session.as_ref().map(SessionId::as_str), &chunk.vector);
                }
            }
            Ok(ids)
        })
        .await
    }
}

fn check_dims(vector: &[f32], dims: usize) -> Result<(), MemoryError> {
    if vector.len() == dims {
        Ok(())
    } else {
        Err(MemoryError::Embedding(format!(
            "embedder returned {} dimensions, declared {dims}",
            vector.len()
        )))
    }
}

impl Inner {
    /// Run the search (on a blocking thread).
    fn search_blocking(
        &self,
        query: &str,
        query_vector: Option<Vec<f32>>,
        scope: &SearchScope,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>, MemoryError> {
        let settings = &self.config.retrieval;
        let candidates = top_k.saturating_mul(4).max(settings.min_candidates);
        let session = match scope {
            SearchScope::Session(id) => Some(id),
            SearchScope::Global => None,
        };
        let conn = self.conn();
        let text_hits = if settings.text_weight > 0.0 {
            let terms = chunks::selective_terms(
                &conn,
                &self.path,
                query_terms(query),
                settings.max_term_docs,
            )?;
            match terms_expression(&terms) {
                Some(expression) => {
                    chunks::fts_search(&conn, &self.path, &expression, session, candidates)?
                }
                None => Vec::new(),
            }
        } else {
            Vec::new()
        };
        let vector_hits = match query_vector {
            Some(vector) => {
                let mut index = self.index();
                let version = chunks::data_version(&conn, &self.path)?;
                if index.as_ref().is_none_or(|i| i.data_version != version) {
                    let embedder = &self.config.embedder;
                    *index = Some(chunks::load_index(
                        &conn,
                        &self.path,
                        &embedder.model(),
                        embedder.dimensions(),
                    )?);
                }
                // The cache is current; let writers in while we scan it.
                drop(conn);
                index
                    .as_ref()
                    .map(|i| i.search(&vector, session.map(SessionId::as_str), candidates))
                    .unwrap_or_default()
            }
            None => {
                drop(conn);
                Vec::new()
            }
        };
        tracing::debug!(
            text_hits = text_hits.len(),
            vector_hits = vector_hits.len(),
            "search candidates"
        );
        let ranked = merge(
            &vector_hits,
            &text_hits,
            settings.vector_weight,
            settings.text_weight,
            top_k,
        );
        let conn = self.conn();
        let mut out = Vec::with_capacity(ranked.len());
        for (chunk_id, score) in ranked {
            if let Some((session_id, text)) = chunks::fetch_chunk(&conn, &self.path, chunk_id)? {
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
}

#[async_trait]
impl MemoryRetrieval for SqliteMemory {
    async fn store_text(
        &self,
        session: Option<&SessionId>,
        text: &str,
    ) -> Result<Vec<i64>, MemoryError> {
        let settings = &self.inner.config.retrieval;
        let pieces = chunk_text(text, settings.chunk_max_chars, settings.chunk_overlap);
        self.store_chunks(session, pieces).await
    }

    async fn search(
        &self,
        query: &str,
        scope: &SearchScope,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>, MemoryError> {
        if top_k == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let embedder = &self.inner.config.embedder;
        let query_vector = if self.inner.config.retrieval.vector_weight > 0.0 {
            let mut vectors = embedder.embed(&[query.to_owned()]).await?;
            let mut vector = vectors
                .pop()
                .ok_or_else(|| MemoryError::Embedding("no vector for the query".into()))?;
            check_dims(&vector, embedder.dimensions())?;
            normalize(&mut vector);
            Some(vector)
        } else {
            None
        };
        let span = tracing::debug_span!(
            "memory.search",
            scope = field::debug(scope),
            top_k,
            hits = field::Empty
        );
        let (query, scope) = (query.to_owned(), scope.clone());
        self.run(span, move |inner| {
            let hits = inner.search_blocking(&query, query_vector, &scope, top_k)?;
            tracing::Span::current().record("hits", hits.len());
            Ok(hits)
        })
        .await
    }
}
