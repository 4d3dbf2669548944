//! A throwaway schema on a test server, for tests (feature `testing`).
//!
//! Two servers: the one named by `OXYDRA_TEST_POSTGRES_URL` (default
//! [`DEFAULT_TEST_URL`]; Debian's PostgreSQL 15, without pgvector) and the one with
//! pgvector named by `OXYDRA_TEST_PGVECTOR_URL` (no default;
//! `scripts/start-pgvector-server.sh` starts one and prints its URL). Each
//! [`TestDatabase`] creates a schema of its own, so tests run in parallel on one
//! database, and drops it when dropped. Without a reachable server
//! [`TestDatabase::create`] and [`TestDatabase::create_pgvector`] return `None` after
//! printing why the test is skipped — except under CI (`CI` set to `true`), where a
//! missing server is a failure.
#![allow(clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::database::{PostgresDatabase, PostgresOptions};

/// The environment variable naming the test server.
pub const TEST_URL_VAR: &str = "OXYDRA_TEST_POSTGRES_URL";
/// The test server when the variable is unset.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// The environment variable naming the test server with pgvector (a superuser's
/// login: the tests create databases and roles on it).
pub const PGVECTOR_URL_VAR: &str = "OXYDRA_TEST_PGVECTOR_URL";

/// What every test connection made through [`TestDatabase`] sets for its session: a
/// commit does not wait for the server's disk. Visibility to other connections is
/// unchanged (a commit is seen at once); only a crash of the server itself could lose
/// the last commits, which no test does. The conformance suites store a thousand
/// chunks one commit each, and waiting for the disk was most of their time.
pub const TEST_SESSION_OPTIONS: &str = "-c synchronous_commit=off";

/// [`TEST_SESSION_OPTIONS`] as the value of a URL's `options` parameter.
fn session_options_param() -> String {
    TEST_SESSION_OPTIONS.replace('=', "%3D").replace(' ', "%20")
}

/// The URL of the test server.
pub fn test_url() -> String {
    std::env::var(TEST_URL_VAR).unwrap_or_else(|_| DEFAULT_TEST_URL.to_owned())
}

/// The URL of the test server with pgvector, when one is named.
pub fn pgvector_url() -> Option<String> {
    std::env::var(PGVECTOR_URL_VAR)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// Whether the tests run under CI (`CI=true`), where a missing server is a failure.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Says that a test is skipped because of `reason`; under CI, fails it instead.
///
/// # Panics
/// Under CI.
pub fn skip(reason: &str) {
    if under_ci() {
        panic!("{reason} (a missing test server is a failure under CI)");
    }
    eprintln!("skipped: {reason}");
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
        Self::create_on(test_url(), TEST_URL_VAR).await
    }

    /// A new schema on the test server with pgvector (`OXYDRA_TEST_PGVECTOR_URL`), or
    /// `None` (having printed why) when none is named or it cannot be reached outside
    /// CI.
    ///
    /// # Panics
    /// Under CI (`CI=true`) when no server is named or it cannot be reached.
    pub async fn create_pgvector() -> Option<Self> {
        let Some(url) = pgvector_url() else {
            skip(&format!(
                "no PostgreSQL test server with pgvector: set {PGVECTOR_URL_VAR} (scripts/start-pgvector-server.sh starts one and prints its URL)"
            ));
            return None;
        };
        Self::create_on(url, PGVECTOR_URL_VAR).await
    }

    /// A new schema on the server at `url`, named by the variable `var`.
    async fn create_on(url: String, var: &str) -> Option<Self> {
        let schema = unique_name("oxydra_test");
        match execute(&url, &format!("CREATE SCHEMA {schema}")).await {
            Ok(()) => Some(Self { url, schema }),
            Err(reason) => {
                skip(&format!(
                    "no PostgreSQL test server at {url} ({reason}); set {var} to run these PostgreSQL tests"
                ));
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

    /// Options connecting to this schema, with [`TEST_SESSION_OPTIONS`].
    pub fn options(&self) -> PostgresOptions {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        PostgresOptions {
            schema: Some(self.schema.clone()),
            ..PostgresOptions::new(format!(
                "{}{separator}options={}",
                self.url,
                session_options_param()
            ))
        }
    }

    /// The URL with this schema as its search path (what `--db` would be given), with
    /// [`TEST_SESSION_OPTIONS`].
    pub fn url_with_schema(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options={}%20-csearch_path%3D{}",
            self.url,
            session_options_param(),
            self.schema
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

/// A database of its own on a test server, for what a schema cannot isolate (whether
/// an extension is installed, who owns the database); dropped when dropped, with the
/// role made for it.
#[derive(Debug)]
pub struct ScratchDatabase {
    admin_url: String,
    name: String,
    owner: Option<String>,
}

impl ScratchDatabase {
    /// Creates a database on the server at `admin_url` (a superuser's login).
    pub async fn create(admin_url: &str) -> Result<Self, String> {
        let name = unique_name("oxydra_scratch");
        execute(admin_url, &format!("CREATE DATABASE {name}")).await?;
        Ok(Self {
            admin_url: admin_url.to_owned(),
            name,
            owner: None,
        })
    }

    /// Creates a database owned by a new login role that is not a superuser (so it may
    /// create only trusted extensions).
    pub async fn create_with_owner(admin_url: &str) -> Result<Self, String> {
        let role = unique_name("oxydra_role");
        execute(admin_url, &format!("CREATE ROLE {role} LOGIN NOSUPERUSER")).await?;
        let name = unique_name("oxydra_scratch");
        let created = execute(admin_url, &format!("CREATE DATABASE {name} OWNER {role}")).await;
        if let Err(error) = created {
            let _ = execute(admin_url, &format!("DROP ROLE {role}")).await;
            return Err(error);
        }
        Ok(Self {
            admin_url: admin_url.to_owned(),
            name,
            owner: Some(role),
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of this database with the superuser's login.
    pub fn url(&self) -> String {
        with_user_and_database(&self.admin_url, None, &self.name)
    }

    /// The URL of this database with its owner's login (the superuser's when it was
    /// made without an owner).
    pub fn owner_url(&self) -> String {
        with_user_and_database(&self.admin_url, self.owner.as_deref(), &self.name)
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let url = self.admin_url.clone();
        let mut sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE);", self.name);
        if let Some(role) = &self.owner {
            sql.push_str(&format!("DROP ROLE IF EXISTS {role};"));
        }
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?
                .block_on(async {
                    for statement in sql.split_terminator(';') {
                        execute(&url, statement).await?;
                    }
                    Ok::<(), String>(())
                })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("could not drop scratch database {}: {error}", self.name);
        }
    }
}

/// `prefix_<pid>_<n>_<nanos>`: unique across the test processes running at once.
fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    )
}

/// `url` naming `database` (and logging in as `user` when given) instead.
fn with_user_and_database(url: &str, user: Option<&str>, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let query = tail
        .split_once('?')
        .map(|(_, q)| format!("?{q}"))
        .unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let login = match (user, authority.rsplit_once('@')) {
        (Some(user), _) => format!("{user}@"),
        (None, Some((login, _))) => format!("{login}@"),
        (None, None) => String::new(),
    };
    format!("{scheme}://{login}{host}/{database}{query}")
}

/// Runs `sql` on a one-off connection to `url`; the server's message when it fails.
pub async fn execute(url: &str, sql: &str) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_pointed_at_another_database_and_login() {
        let url = "postgres://postgres:pw@127.0.0.1:55432/test?sslmode=disable";
        assert_eq!(
            with_user_and_database(url, None, "other"),
            "postgres://postgres:pw@127.0.0.1:55432/other?sslmode=disable"
        );
        assert_eq!(
            with_user_and_database(url, Some("role_1"), "other"),
            "postgres://role_1@127.0.0.1:55432/other?sslmode=disable"
        );
        assert_eq!(
            with_user_and_database("postgresql://h/db", None, "x"),
            "postgresql://h/x"
        );
        assert_ne!(unique_name("a"), unique_name("a"));
    }
}
