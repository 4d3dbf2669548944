//! PostgreSQL backend of Oxydra: session memory and the coordinator's run store on one
//! PostgreSQL database, so any number of `oxydra serve` workers share sessions and runs.
//!
//! [`PostgresDatabase::connect`] opens a connection pool (tokio-postgres with
//! deadpool) and applies the versioned migrations once, under an advisory lock, so
//! workers starting together are safe. [`PostgresMemory`] implements the memory traits
//! (gap-free sequences, leases fenced inside the write transaction, `tsvector`
//! full-text search, vectors ranked in the process); [`PostgresRunStore`] implements
//! the coordinator's `RunStore`, plus a shared queue that workers claim from with
//! `FOR UPDATE SKIP LOCKED`.

mod database;
mod error;
mod memory;
mod migrations;
mod pgvector;
mod runs;
#[cfg(feature = "testing")]
pub mod testing;

pub use database::{PostgresDatabase, PostgresOptions, is_postgres_url, validate_url};
pub use error::{BACKEND, PostgresError};
pub use memory::{PostgresMemory, PostgresMemoryConfig};
pub use pgvector::VectorBackend;
pub use runs::PostgresRunStore;

/// Milliseconds since the Unix epoch, by this machine's clock. Leases are compared
/// against it, so the workers' clocks must agree to well within a lease's time to
/// live (NTP does).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
