//! [`MemoryRetrieval`] for [`SqliteMemory`]: chunks stored with their vectors, candidates
//! found by FTS5 and the vector cache, ranked by [`merge`].

use async_trait::async_trait;
use oxydra_types::SessionId;
use tracing::field;

use super::chunks;
use super::{Inner, SqliteMemory};
use crate::chunking::chunk_text;
use crate::error::MemoryError;
use crate::retrieval::{SearchPlan, embed_chunks, retrieved_chunks, terms_expression};
use crate::traits::{MemoryRetrieval, RetrievedChunk, SearchScope};

impl SqliteMemory {
    /// Embed and index `texts` as they are (no further chunking) in one transaction;
    /// returns their chunk ids in order.
    pub async fn store_chunks(
        &self,
        session: Option<&SessionId>,
        texts: Vec<String>,
    ) -> Result<Vec<i64>, MemoryError> {
        let embedder = &self.inner.config.embedder;
        let new_chunks = embed_chunks(embedder.as_ref(), texts).await?;
        if new_chunks.is_empty() {
            return Ok(Vec::new());
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

impl Inner {
    /// Run the search of `plan` (on a blocking thread).
    fn search_blocking(&self, plan: SearchPlan) -> Result<Vec<RetrievedChunk>, MemoryError> {
        let settings = &self.config.retrieval;
        let session = plan.session.as_ref();
        let conn = self.conn();
        let text_hits = match &plan.terms {
            Some(terms) => {
                let terms =
                    chunks::selective_terms(&conn, &self.path, terms, settings.max_term_docs)?;
                match terms_expression(&terms) {
                    Some(expression) => chunks::fts_search(
                        &conn,
                        &self.path,
                        &expression,
                        session,
                        plan.candidates,
                    )?,
                    None => Vec::new(),
                }
            }
            None => Vec::new(),
        };
        let vector_hits = match &plan.vector {
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
                    .map(|i| i.search(vector, plan.session_id(), plan.candidates))
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
        let ranked = plan.rank(&vector_hits, &text_hits);
        let conn = self.conn();
        retrieved_chunks(ranked, |chunk_id| {
            chunks::fetch_chunk(&conn, &self.path, chunk_id)
        })
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
        let settings = &self.inner.config.retrieval;
        let embedder = self.inner.config.embedder.as_ref();
        let Some(plan) = SearchPlan::new(query, scope, top_k, settings, embedder).await? else {
            return Ok(Vec::new());
        };
        let span = tracing::debug_span!(
            "memory.search",
            scope = field::debug(scope),
            top_k,
            hits = field::Empty
        );
        self.run(span, move |inner| {
            let hits = inner.search_blocking(plan)?;
            tracing::Span::current().record("hits", hits.len());
            Ok(hits)
        })
        .await
    }
}
