//! A throwaway schema on the test server, for tests (feature `testing`).
//!
//! The server is named by `OXYDRA_TEST_POSTGRES_URL` (default
//! [`DEFAULT_TEST_URL`]). Each [`TestDatabase`] creates a schema of its own, so tests
//! run in parallel on one database, and drops it when dropped. Without a reachable
//! server [`TestDatabase::create`] returns `None` after printing why the test is
//! skipped — except under CI (`CI` set to `true`), where a missing server is a failure.
#![allow(clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::database::{PostgresDatabase, PostgresOptions};

/// The environment variable naming the test server.
pub const TEST_URL_VAR: &str = "OXYDRA_TEST_POSTGRES_URL";
/// The test server when the variable is unset.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The URL of the test server.
pub fn test_url() -> String {
    std::env::var(TEST_URL_VAR).unwrap_or_else(|_| DEFAULT_TEST_URL.to_owned())
}

/// A fresh schema on the test server, dropped with everything in it when dropped.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    schema: String,
}

impl TestDatabase {
    /// Creates a new schema, or `None` (having printed why) when the server cannot be
    /// reached outside CI.
    ///
    /// # Panics
    /// Under CI (`CI=true`) when the server cannot be reached.
    pub async fn create() -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let url = test_url();
        let schema = format!(
            "oxydra_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        match execute(&url, &format!("CREATE SCHEMA {schema}")).await {
            Ok(()) => Some(Self { url, schema }),
            Err(reason) => {
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    panic!(
                        "PostgreSQL test server unreachable under CI ({TEST_URL_VAR}={url}): {reason}"
                    );
                }
                eprintln!(
                    "skipped: no PostgreSQL test server at {url} ({reason}); set {TEST_URL_VAR} to run the PostgreSQL tests"
                );
                None
            }
        }
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Options connecting to this schema.
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions {
            schema: Some(self.schema.clone()),
            ..PostgresOptions::new(self.url.clone())
        }
    }

    /// The URL with this schema as its search path (what `--db` would be given).
    pub fn url_with_schema(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.url, self.schema
        )
    }

    /// Connects to this schema (applying the migrations).
    ///
    /// # Panics
    /// When connecting fails.
    pub async fn connect(&self) -> PostgresDatabase {
        match PostgresDatabase::connect(&self.options()).await {
            Ok(database) => database,
            Err(error) => panic!("connecting to the test schema: {error}"),
        }
    }

    /// [`connect`](Self::connect) from synchronous code inside a multi-threaded Tokio
    /// runtime.
    pub fn connect_blocking(&self) -> PostgresDatabase {
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(self.connect()))
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (url, sql) = (
            self.url.clone(),
            format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema),
        );
        // Its own thread and runtime: drop may run inside or outside any runtime.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?
                .block_on(execute(&url, &sql))
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("could not drop test schema {}: {error}", self.schema);
        }
    }
}

/// Runs `sql` on a one-off connection to `url`.
async fn execute(url: &str, sql: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| crate::error::driver_message(&e))?;
    let task = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|e| crate::error::driver_message(&e));
    drop(client);
    let _ = task.await;
    result
}
