//! [`SqliteMemory`]: the SQLite-backed [`Memory`] and [`MemoryRetrieval`](crate::MemoryRetrieval).
//!
//! The one home of `impl SqliteMemory` and of every SQL statement of the memory crate;
//! `rusqlite` errors become [`MemoryError`]s in `error.rs`, at this module's edge.

mod checkpoints;
mod chunks;
mod config;
mod connection;
mod error;
mod file_mode;
mod intents;
mod leases;
mod log_start;
mod messages;
mod meta;
mod migrations;
mod new_database;
mod new_database_sync;
mod search;
mod summary;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use oxydra_types::{Checkpoint, Message, SessionId};
use rusqlite::Connection;
use tracing::{Span, field};

pub use config::{SqliteConfig, Synchronous};
pub use file_mode::{
    DATABASE_DIR_MODE, DATABASE_FILE_MODE, create_database_dir, secure_database_file,
};
pub use migrations::SCHEMA_VERSION;

use crate::checkpoints::{CheckpointBlob, CheckpointStore, StoredCheckpoint};
use crate::error::MemoryError;
use crate::held_leases::HeldLeases;
use crate::lease::{LeaseOwner, SessionLease};
use crate::restore::repair_sequence;
use crate::retrieval::VectorIndex;
use crate::traits::{Memory, SessionInfo, SessionMeta, SessionSummary, StoredMessage};

/// Conversation memory in one SQLite file (WAL mode), with hybrid FTS5 + vector search.
///
/// Cheap to clone: clones share one connection. All SQLite work runs on tokio's blocking
/// pool behind a mutex, so writes through one `SqliteMemory` are serialised; writers in
/// other processes are serialised by SQLite's own lock (`BEGIN IMMEDIATE`, waiting up
/// to the busy timeout).
#[derive(Clone)]
pub struct SqliteMemory {
    inner: Arc<Inner>,
}

/// The state every clone shares; only this module and its children see its fields.
struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Lazily loaded vector cache. Lock order: `conn` before `index`.
    index: Mutex<Option<VectorIndex>>,
    /// The leases this store holds. Appends through this store may write where one of
    /// these is the live lease. Lock order: `conn` before `held`.
    held: HeldLeases,
    config: SqliteConfig,
    /// A new database's image, syncing while the store opened: waited for by the
    /// first [`Inner::conn`] (through `synced`), so that nothing is written before it
    /// is on the disk. Lock order: `unsynced` before `conn`.
    unsynced: Mutex<Option<new_database_sync::PendingSync>>,
    /// Run once, by the first [`Inner::conn`]: waits for `unsynced`, then starts the
    /// log when [`Inner::starts_log`].
    synced: Once,
}

impl std::fmt::Debug for SqliteMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteMemory")
            .field("path", &self.inner.path)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl SqliteMemory {
    /// Open (or create) the database file at `path`, applying pending schema migrations.
    ///
    /// This is a synchronous call doing file I/O: from async code use
    /// [`SqliteMemory::open_async`], which runs it on tokio's blocking pool. Errors name
    /// the file: a file that is not a database, a missing directory, a locked database or
    /// one written by a newer Oxydra.
    pub fn open(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        let (conn, unsynced) = connection::open_connection(Some(path), &config)?;
        let memory = Self::from_connection(path.to_path_buf(), conn, config, unsynced);
        if memory.inner.starts_log() {
            memory.start_log_in_background();
        }
        Ok(memory)
    }

    /// Hands the connection's first use, which starts the write-ahead log
    /// ([`log_start`]), to tokio's blocking pool (a thread of its own outside a
    /// runtime). Should neither start, the caller's first statement starts the log.
    fn start_log_in_background(&self) {
        let inner = Arc::clone(&self.inner);
        let first_use = move || drop(inner.conn());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(first_use)),
            Err(_) => {
                let _ = std::thread::Builder::new()
                    .name("oxydra-db-log".into())
                    .spawn(first_use);
            }
        }
    }

    /// [`SqliteMemory::open`] for async code: the file I/O and the migrations run on
    /// tokio's blocking pool (`spawn_blocking`), so the async threads are not held.
    /// Errors are `open`'s; a blocking task that panicked is [`MemoryError::Worker`].
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), oxydra_memory::MemoryError> {
    /// use oxydra_memory::{SqliteConfig, SqliteMemory};
    ///
    /// let memory = SqliteMemory::open_async("agent.db", SqliteConfig::default()).await?;
    /// # let _ = memory;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_async(
        path: impl Into<PathBuf>,
        config: SqliteConfig,
    ) -> Result<Self, MemoryError> {
        let path = path.into();
        tokio::task::spawn_blocking(move || Self::open(path, config))
            .await
            .map_err(|error| MemoryError::Worker(error.to_string()))?
    }

    /// A private in-memory database with the default config, for tests.
    pub fn open_in_memory() -> Result<Self, MemoryError> {
        Self::open_in_memory_with(SqliteConfig::default())
    }

    /// A private in-memory database with `config`.
    pub fn open_in_memory_with(config: SqliteConfig) -> Result<Self, MemoryError> {
        let (conn, unsynced) = connection::open_connection(None, &config)?;
        Ok(Self::from_connection(
            PathBuf::from(":memory:"),
            conn,
            config,
            unsynced,
        ))
    }

    fn from_connection(
        path: PathBuf,
        conn: Connection,
        config: SqliteConfig,
        unsynced: new_database_sync::PendingSync,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                path,
                conn: Mutex::new(conn),
                index: Mutex::new(None),
                held: HeldLeases::new(),
                config,
                unsynced: Mutex::new(Some(unsynced)),
                synced: Once::new(),
            }),
        }
    }

    /// The database file (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The config it was opened with.
    pub fn config(&self) -> &SqliteConfig {
        &self.inner.config
    }

    /// Run `work` on the blocking pool inside `span`.
    async fn run<T, F>(&self, span: Span, work: F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, MemoryError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let result = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let result = work(&inner);
            if let Err(error) = &result {
                tracing::warn!(%error, "memory operation failed");
            }
            result
        })
        .await;
        result.map_err(|error| MemoryError::Worker(error.to_string()))?
    }
}

impl Inner {
    /// The connection; a panic while it was held left no transaction open (rusqlite
    /// rolls back on drop), so a poisoned lock is still safe to use. The first call
    /// waits for a new database's image to be synced (a second caller meanwhile waits
    /// for the first), then starts the write-ahead log if [`Inner::starts_log`].
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.synced.call_once_force(|_| {
            let pending = self
                .unsynced
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(pending) = pending {
                pending.wait();
            }
            if self.starts_log() {
                let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
                if let Err(error) = log_start::start(&conn) {
                    // The first write starts the log instead, as without the option.
                    tracing::debug!(path = %self.path.display(), %error, "could not start the write-ahead log at the open");
                }
            }
        });
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A file database opened with [`SqliteConfig::start_log_at_open`]: its first
    /// [`Inner::conn`] starts the write-ahead log ([`log_start`]).
    fn starts_log(&self) -> bool {
        self.config.start_log_at_open && self.path.as_os_str() != ":memory:"
    }

    fn index(&self) -> MutexGuard<'_, Option<VectorIndex>> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[async_trait]
impl Memory for SqliteMemory {
    async fn append(&self, session: &SessionId, message: &Message) -> Result<u64, MemoryError> {
        let span = tracing::debug_span!(
            "memory.append",
            session_id = %session,
            role = message.role.as_str(),
            sequence = field::Empty
        );
        let (session, message) = (session.clone(), message.clone());
        let record = span.clone();
        let sequence = self
            .run(span, move |inner| {
                let held = inner.held.owner(&session);
                messages::append(
                    &mut inner.conn(),
                    &inner.path,
                    &session,
                    &message,
                    held.as_deref(),
                    inner.config.max_message_bytes,
                )
            })
            .await?;
        record.record("sequence", sequence);
        Ok(sequence)
    }

    async fn append_many(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<Vec<u64>, MemoryError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let span = tracing::debug_span!(
            "memory.append_many",
            session_id = %session,
            messages = messages.len()
        );
        let (session, messages) = (session.clone(), messages.to_vec());
        self.run(span, move |inner| {
            let held = inner.held.owner(&session);
            messages::append_many(
                &mut inner.conn(),
                &inner.path,
                &session,
                &messages,
                held.as_deref(),
                inner.config.max_message_bytes,
            )
        })
        .await
    }

    async fn messages(&self, session: &SessionId) -> Result<Vec<StoredMessage>, MemoryError> {
        let span = tracing::debug_span!("memory.messages", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            messages::messages(&inner.conn(), &inner.path, &session)
        })
        .await
    }

    async fn restore(&self, session: &SessionId) -> Result<Vec<Message>, MemoryError> {
        let span =
            tracing::debug_span!("memory.restore", session_id = %session, messages = field::Empty);
        let session = session.clone();
        self.run(span, move |inner| {
            let stored = messages::messages(&inner.conn(), &inner.path, &session)?;
            let restored = repair_sequence(stored.into_iter().map(|m| m.message).collect());
            Span::current().record("messages", restored.len());
            Ok(restored)
        })
        .await
    }

    async fn session_exists(&self, session: &SessionId) -> Result<bool, MemoryError> {
        let span = tracing::debug_span!("memory.session_exists", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            messages::session_exists(&inner.conn(), &inner.path, &session)
        })
        .await
    }

    async fn list_sessions(&self) -> Result<Vec<SessionInfo>, MemoryError> {
        let span = tracing::debug_span!("memory.list_sessions");
        self.run(span, |inner| {
            messages::list_sessions(&inner.conn(), &inner.path)
        })
        .await
    }

    async fn load_summary(&self, session: &SessionId) -> Result<SessionSummary, MemoryError> {
        let span = tracing::debug_span!("memory.load_summary", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            summary::load_summary(&inner.conn(), &inner.path, &session)
        })
        .await
    }

    async fn store_summary(
        &self,
        session: &SessionId,
        expected_epoch: u64,
        text: &str,
        covers_through: u64,
    ) -> Result<Option<u64>, MemoryError> {
        let span = tracing::debug_span!(
            "memory.store_summary",
            session_id = %session,
            expected_epoch,
            covers_through
        );
        let (session, text) = (session.clone(), text.to_owned());
        self.run(span, move |inner| {
            let stored = summary::store_summary(
                &mut inner.conn(),
                &inner.path,
                &session,
                expected_epoch,
                &text,
                covers_through,
            )?;
            if stored.is_none() {
                tracing::debug!("summary epoch moved; not stored");
            }
            Ok(stored)
        })
        .await
    }

    async fn store_session_meta(
        &self,
        session: &SessionId,
        meta: &SessionMeta,
    ) -> Result<(), MemoryError> {
        let span = tracing::debug_span!("memory.store_session_meta", session_id = %session, model = %meta.model);
        let (session, meta) = (session.clone(), meta.clone());
        self.run(span, move |inner| {
            meta::store(&inner.conn(), &inner.path, &session, &meta)
        })
        .await
    }

    async fn session_meta(&self, session: &SessionId) -> Result<Option<SessionMeta>, MemoryError> {
        let span = tracing::debug_span!("memory.session_meta", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            meta::load(&inner.conn(), &inner.path, &session)
        })
        .await
    }

    async fn delete_session(&self, session: &SessionId) -> Result<(), MemoryError> {
        let span = tracing::debug_span!("memory.delete_session", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            let mut conn = inner.conn();
            messages::delete_session(&mut conn, &inner.path, &session)?;
            if let Some(index) = inner.index().as_mut() {
                index.remove_session(session.as_str());
            }
            Ok(())
        })
        .await
    }

    async fn acquire_session_lease(
        &self,
        session: &SessionId,
        owner: &LeaseOwner,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let span = tracing::debug_span!("memory.acquire_session_lease", session_id = %session, owner = %owner.id);
        let (session, owner) = (session.clone(), owner.clone());
        self.run(span, move |inner| {
            let mut conn = inner.conn();
            let lease = leases::acquire(&mut conn, &inner.path, &session, &owner, ttl)?;
            inner.held.record(&lease);
            Ok(lease)
        })
        .await
    }

    async fn renew_session_lease(
        &self,
        lease: &SessionLease,
        ttl: Duration,
    ) -> Result<SessionLease, MemoryError> {
        let span = tracing::debug_span!("memory.renew_session_lease", session_id = %lease.session_id, owner = %lease.owner);
        let lease = lease.clone();
        self.run(span, move |inner| {
            let mut conn = inner.conn();
            let renewed = leases::renew(&mut conn, &inner.path, &lease, ttl);
            if matches!(renewed, Err(MemoryError::LeaseLost { .. })) {
                inner.held.forget(&lease);
            }
            renewed
        })
        .await
    }

    async fn release_session_lease(&self, lease: &SessionLease) -> Result<(), MemoryError> {
        let span = tracing::debug_span!("memory.release_session_lease", session_id = %lease.session_id, owner = %lease.owner);
        let lease = lease.clone();
        self.run(span, move |inner| {
            let conn = inner.conn();
            inner.held.forget(&lease);
            leases::release(&conn, &inner.path, &lease)
        })
        .await
    }
}

#[async_trait]
impl CheckpointStore for SqliteMemory {
    async fn store_checkpoint(
        &self,
        session: &SessionId,
        checkpoint: &Checkpoint,
        blobs: &[CheckpointBlob],
        keep_last: usize,
    ) -> Result<i64, MemoryError> {
        let span = tracing::debug_span!("memory.store_checkpoint", session_id = %session, turn = checkpoint.turn);
        let (session, checkpoint, blobs) = (session.clone(), checkpoint.clone(), blobs.to_vec());
        self.run(span, move |inner| {
            checkpoints::store(
                &mut inner.conn(),
                &inner.path,
                &session,
                &checkpoint,
                &blobs,
                keep_last,
            )
        })
        .await
    }

    async fn checkpoints(&self, session: &SessionId) -> Result<Vec<StoredCheckpoint>, MemoryError> {
        let span = tracing::debug_span!("memory.checkpoints", session_id = %session);
        let session = session.clone();
        self.run(span, move |inner| {
            checkpoints::list(&inner.conn(), &inner.path, &session)
        })
        .await
    }

    async fn checkpoint_blob(&self, hash: &str) -> Result<Option<Vec<u8>>, MemoryError> {
        let span = tracing::debug_span!("memory.checkpoint_blob");
        let hash = hash.to_owned();
        self.run(span, move |inner| {
            checkpoints::blob(&inner.conn(), &inner.path, &hash)
        })
        .await
    }

    async fn delete_checkpoints_from(
        &self,
        session: &SessionId,
        from_turn: u64,
    ) -> Result<(), MemoryError> {
        let span = tracing::debug_span!("memory.delete_checkpoints_from", session_id = %session, from_turn);
        let session = session.clone();
        self.run(span, move |inner| {
            checkpoints::delete_from(&mut inner.conn(), &inner.path, &session, from_turn)
        })
        .await
    }

    async fn truncate_messages(
        &self,
        session: &SessionId,
        keep_through: u64,
    ) -> Result<(), MemoryError> {
        let span =
            tracing::debug_span!("memory.truncate_messages", session_id = %session, keep_through);
        let session = session.clone();
        self.run(span, move |inner| {
            checkpoints::truncate(&mut inner.conn(), &inner.path, &session, keep_through)
        })
        .await
    }
}
