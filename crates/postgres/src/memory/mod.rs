//! [`PostgresMemory`]: the PostgreSQL-backed [`Memory`] and [`MemoryRetrieval`].

mod chunks;
mod leases;
mod messages;
mod meta;
mod pgvector_chunks;
mod summary;

pub(crate) use chunks::decode_vector;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_memory::{
    Embedder, HashingEmbedder, LeaseOwner, Memory, MemoryError, MemoryRetrieval, RetrievalConfig,
    RetrievedChunk, SearchScope, SessionInfo, SessionLease, SessionMeta, SessionSummary,
    StoredMessage, candidate_count, chunk_text, embed_query, embed_texts, merge, query_terms,
    repair_sequence,
};
use oxydra_types::{Message, SessionId};

use crate::database::PostgresDatabase;
use crate::pgvector::{VectorBackend, VectorSetup};

use chunks::{CachedIndex, NewChunk};

/// How a [`PostgresMemory`] embeds and ranks.
#[derive(Clone)]
pub struct PostgresMemoryConfig {
    /// Turns chunks and queries into vectors; default [`HashingEmbedder`].
    pub embedder: Arc<dyn Embedder>,
    /// Score weights and chunking.
    pub retrieval: RetrievalConfig,
}

impl Default for PostgresMemoryConfig {
    fn default() -> Self {
        Self {
            embedder: Arc::new(HashingEmbedder::default()),
            retrieval: RetrievalConfig::default(),
        }
    }
}

impl fmt::Debug for PostgresMemoryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresMemoryConfig")
            .field("embedder", &self.embedder.model())
            .field("retrieval", &self.retrieval)
            .finish()
    }
}

/// Conversation memory in a PostgreSQL database, shared by any number of processes.
///
/// Sequences are gap-free across processes (each session's writers are serialised by
/// a transaction-scoped advisory lock), leases are checked inside the write
/// transaction and full text is searched through a `tsvector` GIN index. Vectors are
/// searched by the database's [`VectorBackend`]: on the server with pgvector, or
/// ranked in the process from a cache kept in step with the table. Cheap to clone:
/// clones share the pool, the cache and the leases held.
#[derive(Clone)]
pub struct PostgresMemory {
    db: PostgresDatabase,
    config: PostgresMemoryConfig,
    /// The leases this store holds: session id → owner id.
    held: Arc<Mutex<HashMap<String, String>>>,
    index: Arc<tokio::sync::Mutex<Option<CachedIndex>>>,
}

impl fmt::Debug for PostgresMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresMemory")
            .field("database", &self.db.location())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PostgresMemory {
    /// A memory on `db` (connected and migrated).
    pub fn new(db: PostgresDatabase, config: PostgresMemoryConfig) -> Self {
        Self {
            db,
            config,
            held: Arc::new(Mutex::new(HashMap::new())),
            index: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The database it uses.
    pub fn database(&self) -> &PostgresDatabase {
        &self.db
    }

    /// The config it was made with.
    pub fn config(&self) -> &PostgresMemoryConfig {
        &self.config
    }

    /// Where its vectors are stored and searched (the database's choice).
    pub fn vector_backend(&self) -> VectorBackend {
        self.db.vector_backend()
    }

    fn held(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn held_owner(&self, session: &SessionId) -> Option<String> {
        self.held().get(session.as_str()).cloned()
    }

    fn forget_held(&self, lease: &SessionLease) {
        let mut held = self.held();
        if held.get(lease.session_id.as_str()) == Some(&lease.owner) {
            held.remove(lease.session_id.as_str());
        }
    }

    /// Embeds and indexes `texts` as they are (no further chunking) in one
    /// transaction; returns their chunk ids in order.
    pub async fn store_chunks(
        &self,
        session: Option<&SessionId>,
        texts: Vec<String>,
    ) -> Result<Vec<i64>, MemoryError> {
        let texts: Vec<String> = texts.into_iter().filter(|t| !t.trim().is_empty()).collect();
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = &self.config.embedder;
        let vectors = embed_texts(embedder.as_ref(), &texts).await?;
        let new_chunks: Vec<NewChunk> = texts
            .into_iter()
            .zip(vectors)
            .map(|(text, vector)| NewChunk { text, vector })
            .collect();
        let model = embedder.model();
        chunks::insert(&self.db, session, &model, &new_chunks).await
    }

    /// Vector candidates for `vector`: from pgvector, or from the cache, refreshed
    /// first.
    async fn vector_hits(
        &self,
        vector: &[f32],
        session: Option<&SessionId>,
        candidates: usize,
    ) -> Result<Vec<(i64, f32)>, MemoryError> {
        let embedder = &self.config.embedder;
        if let VectorSetup::PgVector { schema } = self.db.vectors() {
            let model = embedder.model();
            return pgvector_chunks::search(&self.db, schema, &model, vector, session, candidates)
                .await;
        }
        let mut cache = self.index.lock().await;
        chunks::refresh_index(
            &self.db,
            &mut cache,
            &embedder.model(),
            embedder.dimensions(),
        )
        .await?;
        let index = cache.as_ref().map(|cached| &cached.index);
        let session = session.map(SessionId::as_str);
        // The scan is CPU work proportional to the number of vectors: keep it off the
        // async threads when it is big.
        match index {
            Some(index) if index.len() > 20_000 => Ok(tokio::task::block_in_place(|| {
                index.search(vector, session, candidates)
            })),
            Some(index) => Ok(index.search(vector, session, candidates)),
            None => Ok(Vec::new()),
        }
    }
}

#[async_trait]
impl Memory for PostgresMemory {
    async fn append(&self, session: &SessionId, message: &Message) -> Result<u64, MemoryError> {
        let held = self.held_owner(session);
        let sequences = messages::append_many(
            &self.db,
            session,
            std::slice::from_ref(message),
            held.as_deref(),
        )
        .await?;
        sequences
            .first()
            .copied()
            .ok_or_else(|| MemoryError::Corrupt {
                location: self.db.location().to_owned(),
                what: format!("append to session {session}"),
                message: "no sequence returned".into(),
            })
    }

    async fn append_many(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<Vec<u64>, MemoryError> {
        let held = self.held_owner(session);
        messages::append_many(&self.db, session, messages, held.as_deref()).await
    }

    async fn messages(&self, session: &SessionId) -> Result<Vec<StoredMessage>, MemoryError> {
        messages::messages(&self.db, session).await
    }

    async fn restore(&self, session: &SessionId) -> Result<Vec<Message>, MemoryError> {
        let stored = messages::messages(&self.db, session).await?;
        Ok(repair_sequence(
            stored.into_iter().map(|m| m.message).collect(),
        ))
    }

    async fn session_exists(&self, session: &SessionId) -> Result<bool, MemoryError> {
        messages::session_exists(&self.db, session).await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>, MemoryError> {
        messages::list_sessions(&self.db).await
    }

    async fn load_summary(&self, session: &SessionId) -> Result<SessionSummary, MemoryError> {
        summary::load(&self.db, session).await
    }

    async fn store_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        text: &str,
        covers_through: u64,
    ) -> Result<Option<u64>, MemoryError> {
        summary::store(&self.db, session, expected_epoch, text, covers_through).await
    }

    async fn store_session_meta(
        &self,
        session: &SessionId,
        meta: &SessionMeta,
    ) -> Result<(), MemoryError> {
        meta::store(&self.db, session, meta).await
    }

    async fn session_meta(&self, session: &SessionId) -> Result<Option<SessionMeta>, MemoryError> {
        meta::load(&self.db, session).await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<(), MemoryError> {
        messages::delete_session(&self.db, session).await?;
        if let Some(cached) = self.index.lock().await.as_mut() {
            cached.index.remove_session(session.as_str());
        }
        Ok(())
    }

    async fn acquire_session_lease(
        &self,
        session: &SessionId,
        owner: &LeaseOwner,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let lease = leases::acquire(&self.db, session, owner, ttl).await?;
        self.held()
            .insert(session.as_str().to_owned(), lease.owner.clone());
        Ok(lease)
    }

    async fn renew_session_lease(
        &self,
        lease: &SessionLease,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let renewed = leases::renew(&self.db, lease, ttl).await;
        if matches!(renewed, Err(MemoryError::LeaseLost { .. })) {
            self.forget_held(lease);
        }
        renewed
    }

    async fn release_session_lease(&self, lease: &SessionLease) -> Result<(), MemoryError> {
        self.forget_held(lease);
        leases::release(&self.db, lease).await
    }
}

#[async_trait]
impl MemoryRetrieval for PostgresMemory {
    async fn store_text(
        &self,
        session: Option<&SessionId>,
        text: &str,
    ) -> Result<Vec<i64>, MemoryError> {
        let settings = &self.config.retrieval;
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
        let settings = &self.config.retrieval;
        let candidates = candidate_count(top_k, settings);
        let session = match scope {
            SearchScope::Session(id) => Some(id),
            SearchScope::Global => None,
        };
        let text_hits = if settings.text_weight > 0.0 {
            let terms =
                chunks::selective_terms(&self.db, query_terms(query), settings.max_term_docs)
                    .await?;
            chunks::text_search(&self.db, &terms, session, candidates).await?
        } else {
            Vec::new()
        };
        let vector_hits = if settings.vector_weight > 0.0 {
            let vector = embed_query(self.config.embedder.as_ref(), query).await?;
            self.vector_hits(&vector, session, candidates).await?
        } else {
            Vec::new()
        };
        let ranked = merge(
            &vector_hits,
            &text_hits,
            settings.vector_weight,
            settings.text_weight,
            top_k,
        );
        let ids: Vec<i64> = ranked.iter().map(|(id, _)| *id).collect();
        let mut found: HashMap<i64, (Option<String>, String)> = chunks::fetch(&self.db, &ids)
            .await?
            .into_iter()
            .map(|(id, session, text)| (id, (session, text)))
            .collect();
        Ok(ranked
            .into_iter()
            .filter_map(|(chunk_id, score)| {
                found
                    .remove(&chunk_id)
                    .map(|(session_id, text)| RetrievedChunk {
                        chunk_id,
                        session_id: session_id.map(SessionId::from),
                        text,
                        score,
                    })
            })
            .collect())
    }
}
