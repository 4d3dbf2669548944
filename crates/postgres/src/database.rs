//! [`PostgresDatabase`]: a connection pool on one PostgreSQL database (and schema), the
//! handle the memory and the run store share.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::config::Host;

use crate::error::{PostgresError, driver_message};
use crate::pgvector::{VectorBackend, VectorSetup};

/// How long a connection attempt may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a free pooled connection.
const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Checks that `url` is a PostgreSQL URL the driver accepts, without connecting.
pub fn validate_url(url: &str) -> Result<(), PostgresError> {
    parse_config(&PostgresOptions::new(url)).map(drop)
}

/// How to connect.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// A `postgres://user[:password]@host[:port]/database[?params]` URL.
    pub url: String,
    /// The schema to keep the tables in (it must exist); `None`: the server's default
    /// search path (`public`). Lets several deployments, or tests, share one database.
    pub schema: Option<String>,
    /// The most connections this process opens; default 16.
    pub max_connections: usize,
    /// Whether a schema not yet on pgvector moves its vectors to it when the server has
    /// the extension (default `true`). `false` keeps the in-process ranking; a schema
    /// already on pgvector stays on it either way.
    pub use_pgvector: bool,
}

impl PostgresOptions {
    /// Options for `url` with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: 16,
            use_pgvector: true,
        }
    }
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: show only where it points.
        let location = parse_config(self)
            .map(|config| location(&config))
            .unwrap_or_else(|_| "(invalid URL)".to_owned());
        f.debug_struct("PostgresOptions")
            .field("location", &location)
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("use_pgvector", &self.use_pgvector)
            .finish()
    }
}

/// A pool of connections to one database. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct PostgresDatabase {
    pool: Pool,
    location: String,
    config: tokio_postgres::Config,
    vectors: Arc<VectorSetup>,
}

impl fmt::Debug for PostgresDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresDatabase")
            .field("location", &self.location)
            .field("vector_backend", &self.vector_backend())
            .finish_non_exhaustive()
    }
}

impl PostgresDatabase {
    /// Connects (one connection is opened at once, so an unreachable server or a
    /// rejected login is reported here), applies the pending migrations of the memory
    /// and the run store, and decides where vectors are searched: with pgvector when
    /// the server has the extension (creating it if this login may) and
    /// [`PostgresOptions::use_pgvector`], else in the process. The choice is logged
    /// once, with the reason when it is not pgvector.
    pub async fn connect(options: &PostgresOptions) -> Result<Self, PostgresError> {
        let config = parse_config(options)?;
        let location = location(&config);
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT + Duration::from_secs(1)))
            .build()
            .map_err(|error| PostgresError::Connect {
                location: location.clone(),
                message: error.to_string(),
            })?;
        let mut database = Self {
            pool,
            location,
            config,
            vectors: Arc::new(VectorSetup::InProcess {
                reason: "not decided yet".into(),
            }),
        };
        let mut client = database.client().await.map_err(|error| match error {
            PostgresError::Query {
                location, message, ..
            } => PostgresError::Connect { location, message },
            other => other,
        })?;
        let vectors =
            crate::migrations::migrate_all(&mut client, &database.location, options.use_pgvector)
                .await?;
        database.vectors = Arc::new(vectors);
        tracing::debug!(location = %database.location, "connected to PostgreSQL");
        Ok(database)
    }

    /// `host:port/database`, for messages (never the password).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Where the chunks' vectors are stored and searched, as decided when connecting.
    pub fn vector_backend(&self) -> VectorBackend {
        self.vectors.backend()
    }

    /// Why pgvector is not used (the in-process backend), e.g. that the server has no
    /// such extension or that this login may not create it; `None` on pgvector.
    pub fn pgvector_unused_reason(&self) -> Option<&str> {
        match self.vectors.as_ref() {
            VectorSetup::InProcess { reason } => Some(reason),
            VectorSetup::PgVector { .. } => None,
        }
    }

    /// The vector setup (the extension's schema on pgvector).
    pub(crate) fn vectors(&self) -> &VectorSetup {
        &self.vectors
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<Object, PostgresError> {
        self.pool.get().await.map_err(|error| {
            let message = match &error {
                deadpool_postgres::PoolError::Backend(source) => driver_message(source),
                other => other.to_string(),
            };
            PostgresError::Query {
                location: self.location.clone(),
                action: "get a connection".into(),
                message,
            }
        })
    }

    /// The driver's config (for a dedicated connection, such as a listener's).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The error of `action` from a driver error.
    pub(crate) fn error(
        &self,
        action: impl Into<String>,
        source: &tokio_postgres::Error,
    ) -> PostgresError {
        PostgresError::query(&self.location, action, &driver_message(source))
    }
}

/// The driver's config from `options`: the URL, a connect timeout and the schema.
fn parse_config(options: &PostgresOptions) -> Result<tokio_postgres::Config, PostgresError> {
    if !is_postgres_url(&options.url) {
        return Err(PostgresError::InvalidUrl {
            message: "expected a URL starting with postgres:// or postgresql://".into(),
        });
    }
    let mut config = tokio_postgres::Config::from_str(&options.url).map_err(|error| {
        PostgresError::InvalidUrl {
            message: error.to_string(),
        }
    })?;
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.application_name("oxydra");
    if let Some(schema) = &options.schema {
        if schema.is_empty()
            || !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(PostgresError::InvalidUrl {
                message: format!("schema `{schema}`: use letters, digits and `_` only"),
            });
        }
        let existing = config.get_options().unwrap_or_default().to_owned();
        config.options(format!("{existing} -c search_path={schema}").trim());
    }
    Ok(config)
}

/// `host:port/database` of `config`.
fn location(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let database = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{database}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_postgres_urls_are_taken() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("PostgreSQL://h/db"));
        assert!(!is_postgres_url("/var/lib/oxydra/memory.db"));
        assert!(!is_postgres_url("mysql://h/db"));
        let error = parse_config(&PostgresOptions::new("sqlite:///x")).unwrap_err();
        assert!(matches!(error, PostgresError::InvalidUrl { .. }));
    }

    #[test]
    fn the_location_never_shows_the_password() {
        let options = PostgresOptions::new("postgres://alice:s3cret@db.lan:6543/oxydra");
        let config = parse_config(&options).unwrap();
        assert_eq!(location(&config), "db.lan:6543/oxydra");
        let shown = format!("{options:?}");
        assert!(
            !shown.contains("s3cret") && shown.contains("db.lan:6543/oxydra"),
            "{shown}"
        );
    }

    #[test]
    fn a_malformed_url_or_schema_is_refused() {
        for url in ["postgres://h:notaport/db", "postgres://h/db?sslmode=bogus"] {
            let error = parse_config(&PostgresOptions::new(url)).unwrap_err();
            assert!(matches!(error, PostgresError::InvalidUrl { .. }), "{url}");
        }
        let mut options = PostgresOptions::new("postgres://h/db");
        options.schema = Some("x; DROP TABLE runs".into());
        assert!(parse_config(&options).is_err());
        options.schema = Some("tenant_1".into());
        let config = parse_config(&options).unwrap();
        assert_eq!(config.get_options(), Some("-c search_path=tenant_1"));
    }
}
