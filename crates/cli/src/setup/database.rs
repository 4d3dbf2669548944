//! The database behind memory and the coordinator: a SQLite file, or a PostgreSQL
//! server when `--db` / `OXYDRA_DB` / `[memory] db` is a `postgres://` URL.

use std::path::Path;
use std::sync::Arc;

use oxydra::memory::{Memory, MemoryRetrieval, SqliteConfig, SqliteMemory};
use oxydra::postgres::{
    PostgresDatabase, PostgresMemory, PostgresMemoryConfig, PostgresOptions, is_postgres_url,
};

use crate::error::CliError;

/// A memory store of either backend: sessions and retrieval.
pub trait MemoryStore: Memory + MemoryRetrieval {}

impl<T: Memory + MemoryRetrieval> MemoryStore for T {}

/// Whether the database "path" is a PostgreSQL URL.
pub fn is_url(db: &Path) -> bool {
    db.to_str().is_some_and(is_postgres_url)
}

/// The database as shown in messages: a file's path, or a URL without its password.
pub fn shown(db: &Path) -> String {
    match db.to_str() {
        Some(url) if is_postgres_url(url) => redact_url(url),
        _ => db.display().to_string(),
    }
}

/// `url` with the password of its user info and any `password=` parameter replaced by
/// `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Connects to the PostgreSQL database `url` (from `origin`, e.g. `--db`), applying
/// its migrations; errors name the origin and the server, never the password.
pub async fn connect_postgres(url: &str, origin: &str) -> Result<PostgresDatabase, CliError> {
    PostgresDatabase::connect(&PostgresOptions::new(url))
        .await
        .map_err(|error| CliError::Memory {
            path: redact_url(url).into(),
            message: format!("{error} (the database comes from {origin})"),
        })
}

/// Opens the memory at `db`: connects to the PostgreSQL server of a URL, or opens
/// (creating) the SQLite file, its directory made owner-only (`0700`) and the file
/// `0600`.
pub async fn open_memory(db: &Path, origin: &str) -> Result<Arc<dyn MemoryStore>, CliError> {
    if let Some(url) = db.to_str().filter(|url| is_postgres_url(url)) {
        let database = connect_postgres(url, origin).await?;
        return Ok(Arc::new(PostgresMemory::new(
            database,
            PostgresMemoryConfig::default(),
        )));
    }
    if let Some(dir) = db.parent()
        && !dir.as_os_str().is_empty()
    {
        oxydra::memory::create_database_dir(dir).map_err(|source| CliError::Io {
            what: "cannot create the database directory",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let owned = db.to_path_buf();
    let memory =
        tokio::task::spawn_blocking(move || SqliteMemory::open(&owned, SqliteConfig::default()))
            .await
            .map_err(|error| memory_error(db, error))?
            .map_err(|error| memory_error(db, error))?;
    Ok(Arc::new(memory))
}

/// A memory failure naming the database.
pub fn memory_error(db: &Path, error: impl std::fmt::Display) -> CliError {
    CliError::Memory {
        path: shown(db).into(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_and_paths_stay() {
        assert_eq!(
            redact_url("postgres://alice:s3cret@db.lan:5432/oxydra"),
            "postgres://alice:***@db.lan:5432/oxydra"
        );
        assert_eq!(
            redact_url("postgresql://db.lan/x?user=a&password=s3cret&sslmode=disable"),
            "postgresql://db.lan/x?user=a&password=***&sslmode=disable"
        );
        assert_eq!(redact_url("postgres://bob@h/db"), "postgres://bob@h/db");
        assert_eq!(shown(Path::new("/tmp/o.db")), "/tmp/o.db");
        assert!(is_url(Path::new("postgres://h/db")));
        assert!(!is_url(Path::new("/tmp/postgres://x")));
    }
}
