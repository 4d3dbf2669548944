//! [`MemoryRetrieval`] for [`SqliteMemory`]: chunks stored with their vectors, candidates
//! found by FTS5 and the vector cache, ranked by [`merge`].

use async_trait::async_trait;
use oxydra_types::SessionId;
use tracing::field;

use super::chunks::{self, NewChunk};
use super::{Inner, SqliteMemory};
use crate::chunking::chunk_text;
use crate::embedder::{embed_query, embed_texts};
use crate::error::MemoryError;
use crate::retrieval::{candidate_count, merge, query_terms, terms_expression};
use crate::traits::{MemoryRetrieval, RetrievedChunk, SearchScope};

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
        let vectors = embed_texts(embedder.as_ref(), &texts).await?;
        let new_chunks: Vec<NewChunk> = texts
            .into_iter()
            .zip(vectors)
            .map(|(text, vector)| NewChunk { text, vector })
            .collect();
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
        let candidates = candidate_count(top_k, settings);
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
                if index.as_ref().is_none_or(|i| i.generation != version) {
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
        let query_vector = if self.inner.config.retrieval.vector_weight > 0.0 {
            Some(embed_query(self.inner.config.embedder.as_ref(), query).await?)
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
