//! A row of the storage table: what names a database of a backend, how such a name is
//! checked, and how its stores are opened.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

#[cfg(feature = "coordinator")]
use oxydra_coordinator::RunStore;
use oxydra_memory::{Memory, MemoryRetrieval};

use super::DatabaseUrl;
use crate::error::StorageError;

/// How the stores are opened, the same for every backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// The largest one stored message may be (its JSON, images and documents included,
    /// base64-encoded); an append of a larger one fails and stores nothing. Default
    /// [`oxydra_memory::DEFAULT_MAX_MESSAGE_BYTES`] (32 MiB).
    pub max_message_bytes: usize,
    /// The store is opened to be written to soon (a run, a chat, `serve`): a SQLite
    /// file starts its write-ahead log in the background as it opens
    /// ([`SqliteConfig::start_log_at_open`](oxydra_memory::SqliteConfig::start_log_at_open)),
    /// so that the first write does not wait for the log's syncs. Default `false`: a
    /// store opened to be read writes nothing. A server backend ignores it.
    pub writes_soon: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            max_message_bytes: oxydra_memory::DEFAULT_MAX_MESSAGE_BYTES,
            writes_soon: false,
        }
    }
}

/// A memory store of any backend: sessions, retrieval and workspace checkpoints.
pub trait MemoryStore: Memory + MemoryRetrieval + oxydra_memory::CheckpointStore {}

impl<T: Memory + MemoryRetrieval + oxydra_memory::CheckpointStore> MemoryStore for T {}

/// What a backend's open function returns: a boxed future of the opened store.
pub type Opening<'a, T> = Pin<Box<dyn Future<Output = Result<T, StorageError>> + Send + 'a>>;

/// The stores a coordinator serves from, opened together so a server backend shares
/// one connection pool between them.
#[cfg(feature = "coordinator")]
pub struct ServiceStores {
    /// Sessions of the runs of AI agents.
    pub memory: Arc<dyn MemoryStore>,
    /// Blueprints and runs.
    pub runs: Arc<dyn RunStore>,
}

/// One server backend: a row of [`super::BACKENDS`].
#[derive(Debug)]
pub struct Backend {
    /// Its name in messages (`PostgreSQL`).
    pub name: &'static str,
    /// The URL schemes that name it, the one shown in help first (`postgres`,
    /// `postgresql`); matched in any case.
    pub schemes: &'static [&'static str],
    /// Checks a URL of its scheme without connecting: `Err` says what is wrong, never
    /// the password.
    pub check: fn(&str) -> Result<(), String>,
    /// Opens (connecting, migrating) the memory store of a URL.
    pub open_memory: for<'a> fn(&'a DatabaseUrl, StoreOptions) -> Opening<'a, Arc<dyn MemoryStore>>,
    /// Opens the memory and run stores of a URL for a coordinator.
    #[cfg(feature = "coordinator")]
    pub open_service: for<'a> fn(&'a DatabaseUrl, StoreOptions) -> Opening<'a, ServiceStores>,
}
