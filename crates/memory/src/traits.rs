//! The memory traits and the records they exchange.

use std::time::Duration;

use async_trait::async_trait;
use oxydra_types::{Message, SessionId};

use crate::error::MemoryError;
use crate::intents::IntentStore;
use crate::lease::{LeaseOwner, SessionLease};

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
    /// The model its last run asked, from its [`SessionMeta`] (`None` for a session
    /// stored before sessions had one).
    pub model: Option<String>,
    /// The agent (blueprint) it runs as, from its [`SessionMeta`].
    pub agent: Option<String>,
    /// The workspace its last run worked in, from its [`SessionMeta`] (`None` for a
    /// session stored before sessions recorded one).
    pub workspace: Option<String>,
    /// The session it replays, from its [`SessionMeta`] (`None`: no replay).
    pub replay_of: Option<String>,
}

/// What a session runs with, recorded when a run opens it: so that listings can say
/// which model it used, and a session continued later keeps the system prompt (and
/// the agent) it was started with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionMeta {
    /// The model its last run asked.
    pub model: String,
    /// The system prompt its runs send (`None`: none).
    pub system_prompt: Option<String>,
    /// The agent (blueprint) it runs as, when a coordinator's agent started it.
    pub agent: Option<String>,
    /// The workspace (root of the file tools) its last run worked in, as an absolute
    /// path; `None` when not recorded.
    pub workspace: Option<String>,
    /// The session this one replays (`oxydra replay`); `None` for a session of its own.
    /// Set when the replay is stored; later runs of the session keep it.
    pub replay_of: Option<String>,
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
///
/// A session has one writer at a time: a run takes the session's lease
/// ([`acquire_session_lease`](Memory::acquire_session_lease)) before it writes, renews
/// it while it runs and releases it when done. While another owner holds a live lease,
/// acquiring fails with [`MemoryError::SessionBusy`] and so does appending through a
/// store that does not hold it, so two runs can never interleave their messages. A
/// lease that is not renewed lapses after its time to live, so a holder that died never
/// locks its session for ever. Reading needs no lease.
///
/// Every store also keeps the intents and outcomes of side-effecting tool calls
/// ([`IntentStore`]), so that a run resumed after a crash never repeats one blindly.
#[async_trait]
pub trait Memory: IntentStore + Send + Sync {
    /// Append `message` to `session` (creating the session on its first message) and
    /// return its sequence number once the write is committed.
    ///
    /// Fails with [`MemoryError::SessionBusy`] while an owner other than the ones this
    /// store acquired holds a live lease on the session.
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

    /// The session as a conversation to continue: its messages repaired by
    /// [`repair_sequence`](crate::repair_sequence) — each tool call followed at once by
    /// exactly one result, in call order (a synthetic `interrupted` one when none was
    /// stored), and no tool result anywhere else.
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

    /// Record what `session` runs with, replacing what was recorded before. The
    /// session need not have a message yet; a meta without messages is not listed.
    async fn store_session_meta(
        &self,
        session: &SessionId,
        meta: &SessionMeta,
    ) -> Result<(), MemoryError>;

    /// What `session` was last recorded to run with (`None` when nothing was: an
    /// unknown session, or one stored before sessions had a meta).
    async fn session_meta(&self, session: &SessionId) -> Result<Option<SessionMeta>, MemoryError>;

    /// Delete the session with its messages, summary, meta, chunks and intents.
    async fn delete_session(&self, session: &SessionId) -> Result<(), MemoryError>;

    /// Take the lease on `session` for `owner` until `ttl` from now: when nobody holds
    /// it, when the holder's lease has lapsed (the session is taken over) or when
    /// `owner` holds it already (then it is renewed). One attempt, no waiting.
    ///
    /// # Errors
    /// [`MemoryError::SessionBusy`] naming the holder while another owner's lease is live.
    async fn acquire_session_lease(
        &self,
        session: &SessionId,
        owner: &LeaseOwner,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError>;

    /// Extend `lease` until `ttl` from now.
    ///
    /// # Errors
    /// [`MemoryError::LeaseLost`] when the lease is no longer the holder's (it lapsed and
    /// another owner took the session, or it was released).
    async fn renew_session_lease(
        &self,
        lease: &SessionLease,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError>;

    /// Give `lease` up (nothing happens when it is no longer the holder's).
    async fn release_session_lease(&self, lease: &SessionLease) -> Result<(), MemoryError>;
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
