//! [`PostgresMemory`]: the PostgreSQL-backed [`Memory`] and [`MemoryRetrieval`].

mod checkpoints;
mod chunks;
mod intents;
mod leases;
mod messages;
mod meta;
mod pgvector_chunks;
mod summary;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oxydra_memory::{
    CheckpointBlob, CheckpointStore, DEFAULT_MAX_MESSAGE_BYTES, Embedder, HashingEmbedder,
    HeldLeases, LeaseOwner, Memory, MemoryError, MemoryRetrieval, RetrievalConfig, RetrievedChunk,
    SearchPlan, SearchScope, SessionInfo, SessionLease, SessionMeta, SessionSummary,
    StoredCheckpoint, StoredMessage, chunk_text, embed_chunks, repair_sequence, retrieved_chunks,
    single_sequence,
};
use oxydra_types::{Checkpoint, Message, SessionId};

use crate::database::PostgresDatabase;
use crate::pgvector::{VectorBackend, VectorSetup};

use chunks::CachedIndex;

/// How a [`PostgresMemory`] embeds and ranks.
#[derive(Clone)]
pub struct PostgresMemoryConfig {
    /// Turns chunks and queries into vectors; default [`HashingEmbedder`].
    pub embedder: Arc<dyn Embedder>,
    /// Score weights and chunking.
    pub retrieval: RetrievalConfig,
    /// The largest one message may be as stored (its JSON, images and documents
    /// included, base64-encoded); default [`DEFAULT_MAX_MESSAGE_BYTES`] (32 MiB). An
    /// append with a larger message fails with [`MemoryError::MessageTooLarge`].
    pub max_message_bytes: usize,
}

impl Default for PostgresMemoryConfig {
    fn default() -> Self {
        Self {
            embedder: Arc::new(HashingEmbedder::default()),
            retrieval: RetrievalConfig::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

impl fmt::Debug for PostgresMemoryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresMemoryConfig")
            .field("embedder", &self.embedder.model())
            .field("retrieval", &self.retrieval)
            .field("max_message_bytes", &self.max_message_bytes)
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
    /// The leases this store holds.
    held: HeldLeases,
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
            held: HeldLeases::new(),
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

    /// Embeds and indexes `texts` as they are (no further chunking) in one
    /// transaction; returns their chunk ids in order.
    pub async fn store_chunks(
        &self,
        session: Option<&SessionId>,
        texts: Vec<String>,
    ) -> Result<Vec<i64>, MemoryError> {
        let embedder = &self.config.embedder;
        let new_chunks = embed_chunks(embedder.as_ref(), texts).await?;
        if new_chunks.is_empty() {
            return Ok(Vec::new());
        }
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
        let held = self.held.owner(session);
        let sequences = messages::append_many(
            &self.db,
            session,
            std::slice::from_ref(message),
            held.as_deref(),
            self.config.max_message_bytes,
        )
        .await?;
        single_sequence(&sequences, self.db.location(), session)
    }

    async fn append_many(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<Vec<u64>, MemoryError> {
        let held = self.held.owner(session);
        messages::append_many(
            &self.db,
            session,
            messages,
            held.as_deref(),
            self.config.max_message_bytes,
        )
        .await
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
        self.held.record(&lease);
        Ok(lease)
    }

    async fn renew_session_lease(
        &self,
        lease: &SessionLease,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let renewed = leases::renew(&self.db, lease, ttl).await;
        if matches!(renewed, Err(MemoryError::LeaseLost { .. })) {
            self.held.forget(lease);
        }
        renewed
    }

    async fn release_session_lease(&self, lease: &SessionLease) -> Result<(), MemoryError> {
        self.held.forget(lease);
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
        let settings = &self.config.retrieval;
        let embedder = self.config.embedder.as_ref();
        let Some(plan) = SearchPlan::new(query, scope, top_k, settings, embedder).await? else {
            return Ok(Vec::new());
        };
        let session = plan.session.as_ref();
        let text_hits = match &plan.terms {
            Some(terms) => {
                let terms =
                    chunks::selective_terms(&self.db, terms, settings.max_term_docs).await?;
                chunks::text_search(&self.db, &terms, session, plan.candidates).await?
            }
            None => Vec::new(),
        };
        let vector_hits = match &plan.vector {
            Some(vector) => self.vector_hits(vector, session, plan.candidates).await?,
            None => Vec::new(),
        };
        let ranked = plan.rank(&vector_hits, &text_hits);
        let ids: Vec<i64> = ranked.iter().map(|(id, _)| *id).collect();
        let mut found: HashMap<i64, (Option<String>, String)> = chunks::fetch(&self.db, &ids)
            .await?
            .into_iter()
            .map(|(id, session, text)| (id, (session, text)))
            .collect();
        retrieved_chunks::<MemoryError>(ranked, |chunk_id| Ok(found.remove(&chunk_id)))
    }
}

#[async_trait]
impl CheckpointStore for PostgresMemory {
    async fn store_checkpoint(
        &self,
        session: &SessionId,
        checkpoint: &Checkpoint,
        blobs: &[CheckpointBlob],
        keep_last: usize,
    ) -> Result<i64, MemoryError> {
        checkpoints::store(&self.db, session, checkpoint, blobs, keep_last).await
    }

    async fn checkpoints(&self, session: &SessionId) -> Result<Vec<StoredCheckpoint>, MemoryError> {
        checkpoints::list(&self.db, session).await
    }

    async fn checkpoint_blob(&self, hash: &str) -> Result<Option<Vec<u8>>, MemoryError> {
        checkpoints::blob(&self.db, hash).await
    }

    async fn delete_checkpoints_from(
        &self,
        session: &SessionId,
        from_turn: u64,
    ) -> Result<(), MemoryError> {
        checkpoints::delete_from(&self.db, session, from_turn).await
    }

    async fn truncate_messages(
        &self,
        session: &SessionId,
        keep_through: u64,
    ) -> Result<(), MemoryError> {
        checkpoints::truncate(&self.db, session, keep_through).await
    }
}
