//! PostgreSQL backend of Oxydra: session memory and the coordinator's run store on one
//! PostgreSQL database, so any number of `oxydra serve` workers share sessions and runs.
//!
//! [`PostgresDatabase::connect`] opens a connection pool (tokio-postgres with
//! deadpool) and applies the versioned migrations once, under an advisory lock, so
//! workers starting together are safe. [`PostgresMemory`] implements the memory traits
//! (gap-free sequences, leases fenced inside the write transaction, `tsvector`
//! full-text search); [`PostgresRunStore`] implements the coordinator's `RunStore`,
//! plus a shared queue that workers claim from with `FOR UPDATE SKIP LOCKED`. The
//! crate keeps only SQL: the lease decision, message encoding, the search plan and
//! run-row decoding are the shared functions of `oxydra-memory` and
//! `oxydra-coordinator`, which SQLite calls as well.
//!
//! Vectors are stored and searched with pgvector when the server has the `vector`
//! extension (installed, or available and creatable by this login): an exact cosine
//! scan on the server, nothing held in the process. Without it (Debian 12's
//! PostgreSQL 15 has no pgvector package) they are ranked in each process from a cache
//! of every vector, memory proportional to the chunks per worker. Both rank alike;
//! [`PostgresDatabase::vector_backend`] says which one a database got
//! ([`VectorBackend`]), and connecting logs it once, with the reason for a fallback.

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod database;
mod error;
mod memory;
mod migrations;
mod pgvector;
mod runs;
mod schema_version;
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
