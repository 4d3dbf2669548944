//! The PostgreSQL row of the storage table: `postgres://` and `postgresql://` URLs,
//! memory and runs sharing one connection pool (feature `postgres`).

use std::sync::Arc;

use oxydra_postgres::{
    PostgresDatabase, PostgresMemory, PostgresMemoryConfig, PostgresOptions, validate_url,
};

use super::{Backend, DatabaseUrl, MemoryStore, Opening, ServiceStores, StoreOptions};
use crate::error::StorageError;

/// The row.
pub(super) const BACKEND: Backend = Backend {
    name: NAME,
    schemes: &["postgres", "postgresql"],
    check,
    open_memory,
    open_service,
};

const NAME: &str = "PostgreSQL";

fn check(url: &str) -> Result<(), String> {
    validate_url(url).map_err(|error| error.to_string())
}

async fn connect(url: &DatabaseUrl) -> Result<PostgresDatabase, StorageError> {
    PostgresDatabase::connect(&PostgresOptions::new(url.expose()))
        .await
        .map_err(|error| StorageError::Connect {
            backend: NAME,
            message: error.to_string(),
        })
}

fn memory_config(options: StoreOptions) -> PostgresMemoryConfig {
    PostgresMemoryConfig {
        max_message_bytes: options.max_message_bytes,
        ..PostgresMemoryConfig::default()
    }
}

fn open_memory(url: &DatabaseUrl, options: StoreOptions) -> Opening<'_, Arc<dyn MemoryStore>> {
    Box::pin(async move {
        let database = connect(url).await?;
        let memory: Arc<dyn MemoryStore> =
            Arc::new(PostgresMemory::new(database, memory_config(options)));
        Ok(memory)
    })
}

fn open_service(url: &DatabaseUrl, options: StoreOptions) -> Opening<'_, ServiceStores> {
    Box::pin(async move {
        let database = connect(url).await?;
        Ok(ServiceStores {
            memory: Arc::new(PostgresMemory::new(
                database.clone(),
                memory_config(options),
            )),
            runs: Arc::new(oxydra_postgres::PostgresRunStore::new(database)),
        })
    })
}
