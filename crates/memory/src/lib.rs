//! Session memory for Oxydra agents.
//!
//! `oxydra-memory` owns the [`Memory`] trait (sessions, write-through message storage
//! with sequence numbers, crash restore, the rolling summary with an epoch
//! compare-and-swap, session leases) and the [`MemoryRetrieval`] trait (chunks of text
//! searched by full text and by vectors), with a backend-neutral [`MemoryError`] and the
//! pure retrieval algorithms (query terms, vector cache, score merging). Behind the
//! default `sqlite` feature, `SqliteMemory` implements both: one SQLite file in WAL
//! mode with versioned migrations, an FTS5 index and an in-memory vector cache. The
//! `conformance` feature adds the test suites every backend must pass.
//! What every backend decides the same way is written here once and called by each:
//! the lease decision ([`LeaseDecision`], [`check_write`], [`HeldLeases`]), how
//! messages are stored ([`encode_messages`], [`decode_message`]) and the search plan
//! ([`SearchPlan`], [`choose_terms`], [`retrieved_chunks`], [`embed_chunks`]); a
//! backend keeps only its SQL.
//! Vectors come from an [`Embedder`]: the local [`HashingEmbedder`] (default) or an
//! OpenAI-compatible server through [`OpenAiEmbedder`].
//!
//! ```
//! # #[cfg(feature = "sqlite")] {
//! use oxydra_memory::{Memory, MemoryRetrieval, SearchScope, SqliteMemory};
//! use oxydra_types::{Message, SessionId};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let memory = SqliteMemory::open_in_memory()?;
//! let session = SessionId::from("ses_demo");
//! assert_eq!(memory.append(&session, &Message::user("hello")).await?, 1);
//! assert_eq!(memory.append(&session, &Message::assistant("hi!")).await?, 2);
//! assert_eq!(memory.restore(&session).await?.len(), 2);
//!
//! memory.store_text(Some(&session), "The staging cluster runs in eu-west-1.").await?;
//! let hits = memory.search("where is staging?", &SearchScope::Session(session), 3).await?;
//! assert!(hits[0].text.contains("eu-west-1"));
//! # Ok::<(), oxydra_memory::MemoryError>(())
//! # }).unwrap();
//! # }
//! ```

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod checkpoints;
mod chunking;
mod config;
mod embedder;
mod error;
mod held_leases;
mod intents;
mod lease;
mod lease_decision;
mod message_codec;
mod restore;
mod retrieval;
#[cfg(feature = "sqlite")]
mod sqlite;
mod traits;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use checkpoints::{CheckpointBlob, CheckpointStore, StoredCheckpoint};
pub use chunking::chunk_text;
pub use config::RetrievalConfig;
pub use embedder::{
    Embedder, HashingEmbedder, OpenAiEmbedder, OpenAiEmbedderConfig, embed_query, embed_texts,
    normalize,
};
pub use error::MemoryError;
pub use held_leases::HeldLeases;
pub use intents::{IntentOutcome, IntentStatus, IntentStore, StoredIntent, ToolIntent};
pub use lease::{
    DEFAULT_LEASE_TTL, LeaseOwner, SessionLease, holder_is_gone, lease_expiry, this_host,
};
pub use lease_decision::{LeaseDecision, check_write};
pub use message_codec::{
    DEFAULT_MAX_MESSAGE_BYTES, decode_message, encode_messages, single_sequence, stored_count,
};
pub use restore::{INTERRUPTED_RESULT, is_well_formed, repair_sequence, repair_stored};
pub use retrieval::{
    NewChunk, SearchPlan, VectorIndex, candidate_count, choose_terms, decode_vector, embed_chunks,
    encode_vector, match_expression, merge, query_terms, retrieved_chunks, terms_expression,
};
#[cfg(feature = "sqlite")]
pub use sqlite::{
    DATABASE_DIR_MODE, DATABASE_FILE_MODE, SCHEMA_VERSION, SqliteConfig, SqliteMemory, Synchronous,
    create_database_dir, secure_database_file,
};
pub use traits::{
    Memory, MemoryRetrieval, RetrievedChunk, SearchScope, SessionInfo, SessionMeta, SessionSummary,
    StoredMessage,
};
