//! Where sessions and runs are stored, decided from one string: a path names a SQLite
//! file, a URL names a server of the backend whose scheme it has.
//!
//! [`BACKENDS`] is the table of server backends, one [`Backend`] row each (its URL
//! schemes, how a URL is checked, how its memory store and its run store are opened).
//! [`Database::parse`] reads a path or URL once; [`open_memory`] and `open_service`
//! (feature `coordinator`: the memory and run stores of a service) open what it names. The `oxydra` command reads the table for its `--db` flag, its
//! messages and its services, so a new backend is its crate plus a row here.
//!
//! ```
//! use std::path::Path;
//!
//! use oxydra::storage::Database;
//!
//! let file = Database::parse(Path::new("data/oxydra.db"), Path::new("/srv")).unwrap();
//! assert_eq!(file.sqlite_path(), Some(Path::new("/srv/data/oxydra.db")));
//! # #[cfg(feature = "postgres")] {
//! let server = Database::parse(Path::new("postgres://app:s3cret@db.lan/oxydra"), Path::new("")).unwrap();
//! assert_eq!(server.to_string(), "postgres://app:***@db.lan/oxydra");
//! # }
//! ```

mod backend;
mod database;
#[cfg(feature = "postgres")]
mod postgres;
mod redact;
mod sqlite;

use std::sync::Arc;

pub use crate::error::StorageError;
#[cfg(feature = "coordinator")]
pub use backend::ServiceStores;
pub use backend::{Backend, MemoryStore, Opening, StoreOptions};
pub use database::{Database, DatabaseUrl};
pub use redact::redact_url;

/// The server backends, one row each, in the order `--db`'s help names them. A path
/// that is no URL of theirs is a SQLite file.
pub const BACKENDS: &[Backend] = &[
    #[cfg(feature = "postgres")]
    postgres::BACKEND,
];

/// The row whose scheme `raw` starts with (`scheme://`, any case, after leading
/// blanks), if any.
pub fn backend_of(raw: &str) -> Option<&'static Backend> {
    let (scheme, _) = raw.trim_start().split_once("://")?;
    BACKENDS.iter().find(|backend| {
        backend
            .schemes
            .iter()
            .any(|known| known.eq_ignore_ascii_case(scheme))
    })
}

/// Whether `raw` is the URL of a server backend rather than a file's path.
pub fn is_url(raw: &str) -> bool {
    backend_of(raw).is_some()
}

/// What `--db` accepts, for help and messages: "SQLite file or `postgres://` URL"
/// (each row's first scheme).
pub fn accepted() -> String {
    let mut text = String::from("SQLite file");
    for backend in BACKENDS {
        if let Some(scheme) = backend.schemes.first() {
            text.push_str(&format!(" or `{scheme}://` URL"));
        }
    }
    text
}

/// Opens (or creates) the memory store of `db` with the default [`StoreOptions`]:
/// connects to the server, or opens the SQLite file (its directory made owner-only,
/// `0700`, and the file `0600`).
pub async fn open_memory(db: &Database) -> Result<Arc<dyn MemoryStore>, StorageError> {
    open_memory_with(db, StoreOptions::default()).await
}

/// [`open_memory`] with `options` (the per-message size cap).
pub async fn open_memory_with(
    db: &Database,
    options: StoreOptions,
) -> Result<Arc<dyn MemoryStore>, StorageError> {
    match db {
        Database::Sqlite(path) => sqlite::open_memory(path, options).await,
        Database::Url(url) => (url.backend().open_memory)(url, options).await,
    }
}

/// Opens the stores of a coordinator serving from `db` with the default
/// [`StoreOptions`]: the memory store and the run store (on a server, sharing one
/// connection pool; on SQLite, the same file).
#[cfg(feature = "coordinator")]
pub async fn open_service(db: &Database) -> Result<ServiceStores, StorageError> {
    open_service_with(db, StoreOptions::default()).await
}

/// [`open_service`] with `options` (the per-message size cap of the memory store).
#[cfg(feature = "coordinator")]
pub async fn open_service_with(
    db: &Database,
    options: StoreOptions,
) -> Result<ServiceStores, StorageError> {
    match db {
        Database::Sqlite(path) => sqlite::open_service(path, options).await,
        Database::Url(url) => (url.backend().open_service)(url, options).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_matched_whole_in_any_case_and_paths_are_files() {
        assert!(!is_url("/tmp/postgres://x"));
        assert!(!is_url("oxydra.db"));
        assert!(!is_url("mysql://h/db"));
        #[cfg(feature = "postgres")]
        {
            assert!(is_url("postgres://h/db"));
            assert!(is_url("  PostgreSQL://h/db"));
            assert!(!is_url("postgresx://h/db"));
            assert_eq!(accepted(), "SQLite file or `postgres://` URL");
        }
    }
}
