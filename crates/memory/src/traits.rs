//! The memory traits and the records they exchange.

use async_trait::async_trait;
use oxydra_types::{Message, SessionId};

use crate::error::MemoryError;

/// A message as stored, with its place in the session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Position in the session: unique, increasing, from 1, without gaps.
    pub sequence: u64,
    /// The message.
    pub message: Message,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

/// A stored session, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session.
    pub session_id: SessionId,
    /// When its first message was stored (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// When its last message was stored (ms since the Unix epoch).
    pub updated_at_ms: i64,
    /// How many messages it holds.
    pub messages: u64,
}

/// The rolling summary of a session's older turns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionSummary {
    /// The summary text; `None` before the first summary.
    pub text: Option<String>,
    /// Messages up to and including this sequence number are condensed into `text`.
    pub covers_through: u64,
    /// Incremented on every successful store; the compare-and-swap key.
    pub epoch: u64,
}

/// Where a search looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchScope {
    /// Chunks of one session.
    Session(SessionId),
    /// All chunks.
    Global,
}

/// A chunk a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievedChunk {
    /// The chunk's id in the store.
    pub chunk_id: i64,
    /// The session it belongs to, if any.
    pub session_id: Option<SessionId>,
    /// Its text.
    pub text: String,
    /// The merged score (higher is more relevant).
    pub score: f32,
}

/// Conversation storage. Every call is durable when it returns.
#[async_trait]
pub trait Memory: Send + Sync {
    /// Append `message` to `session` (creating the session on its first message) and
    /// return its sequence number once the write is committed.
    async fn append(&self, session: &SessionId, message: &Message) -> Result<u64, MemoryError>;

    /// Append `messages` to `session` in order and return their sequence numbers once
    /// they are committed. Stores override this to commit them in one transaction (all
    /// or none); the default appends them one by one.
    async fn append_many(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<Vec<u64>, MemoryError> {
        let mut sequences = Vec::with_capacity(messages.len());
        for message in messages {
            sequences.push(self.append(session, message).await?);
        }
        Ok(sequences)
    }

    /// The session's messages in sequence order (empty for an unknown session).
    async fn messages(&self, session: &SessionId) -> Result<Vec<StoredMessage>, MemoryError>;

    /// The session as a conversation to continue: its messages in order, with a
    /// synthetic `interrupted` tool result after any tool call left without one.
    async fn restore(&self, session: &SessionId) -> Result<Vec<Message>, MemoryError>;

    /// Whether the session has been stored.
    async fn session_exists(&self, session: &SessionId) -> Result<bool, MemoryError>;

    /// All stored sessions, most recently updated first.
    async fn list_sessions(&self) -> Result<Vec<SessionInfo>, MemoryError>;

    /// The session's rolling summary (the default when it has none).
    async fn load_summary(&self, session: &SessionId) -> Result<SessionSummary, MemoryError>;

    /// Store a new summary if the stored epoch is still `expected_epoch`; returns the new
    /// epoch, or `None` when another writer got there first.
    async fn store_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        text: &str,
        covers_through: u64,
    ) -> Result<Option<u64>, MemoryError>;

    /// Delete the session with its messages, summary and chunks.
    async fn delete_session(&self, session: &SessionId) -> Result<(), MemoryError>;
}

/// Retrieval of relevant snippets.
#[async_trait]
pub trait MemoryRetrieval: Send + Sync {
    /// Split `text` into overlapping chunks, embed and index them; returns their ids.
    async fn store_text(
        &self,
        session: Option<&SessionId>,
        text: &str,
    ) -> Result<Vec<i64>, MemoryError>;

    /// The `top_k` chunks most relevant to `query` within `scope`, best first.
    async fn search(
        &self,
        query: &str,
        scope: &SearchScope,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>, MemoryError>;
}
