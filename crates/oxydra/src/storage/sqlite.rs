//! The file backend: a path that is no backend's URL is a SQLite file, for memory and
//! (with the coordinator) runs.

use std::path::Path;
use std::sync::Arc;

use oxydra_memory::{SqliteConfig, SqliteMemory};

#[cfg(feature = "coordinator")]
use super::ServiceStores;
use super::{MemoryStore, StoreOptions};
use crate::error::StorageError;

const NAME: &str = "SQLite";

/// Opens (or creates) the memory at `path` with `options`, its directory made
/// owner-only (`0700`) and the file `0600`; the blocking open runs off the async threads.
pub(super) async fn open_memory(
    path: &Path,
    options: StoreOptions,
) -> Result<Arc<dyn MemoryStore>, StorageError> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        oxydra_memory::create_database_dir(dir).map_err(|source| StorageError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    let owned = path.to_path_buf();
    let config = SqliteConfig {
        max_message_bytes: options.max_message_bytes,
        start_log_at_open: options.writes_soon,
        ..SqliteConfig::default()
    };
    let memory = tokio::task::spawn_blocking(move || SqliteMemory::open(&owned, config))
        .await
        .map_err(opening_failed)?
        .map_err(opening_failed)?;
    Ok(Arc::new(memory))
}

/// The memory at `path` and the run store in the same file.
#[cfg(feature = "coordinator")]
pub(super) async fn open_service(
    path: &Path,
    options: StoreOptions,
) -> Result<ServiceStores, StorageError> {
    let memory = open_memory(path, options).await?;
    let owned = path.to_path_buf();
    let runs = tokio::task::spawn_blocking(move || {
        oxydra_coordinator::SqliteRunStore::open(Some(owned.as_path()))
    })
    .await
    .map_err(opening_failed)?
    .map_err(opening_failed)?;
    Ok(ServiceStores {
        memory,
        runs: Arc::new(runs),
    })
}

fn opening_failed(error: impl std::fmt::Display) -> StorageError {
    StorageError::Open {
        backend: NAME,
        message: error.to_string(),
    }
}
