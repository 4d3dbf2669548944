//! The one error type of `oxydra-postgres`, and its conversion into the errors of the
//! traits this crate implements.

use oxydra_coordinator::CoordinatorError;
use oxydra_memory::MemoryError;
use thiserror::Error;

/// The backend's name in the errors it reports.
pub const BACKEND: &str = "postgres";

/// Why connecting to, or using, a PostgreSQL database failed. Every variant names the
/// database (host, port and database name; never a password).
#[derive(Debug, Error)]
pub enum PostgresError {
    /// The connection URL could not be parsed.
    #[error("invalid PostgreSQL URL: {message}")]
    InvalidUrl {
        /// What the parser said.
        message: String,
    },
    /// The server could not be reached, refused the connection or rejected the login.
    #[error("cannot connect to PostgreSQL at {location}: {message}")]
    Connect {
        /// Host, port and database.
        location: String,
        /// The driver's message.
        message: String,
    },
    /// A statement failed while doing `action`.
    #[error("postgres database {location}: {action}: {message}")]
    Query {
        /// Host, port and database.
        location: String,
        /// What was being done.
        action: String,
        /// The driver's message.
        message: String,
    },
    /// The database holds a newer schema than this build knows.
    #[error(
        "postgres database {location}: {component} schema version {found} is newer than this build supports ({supported}); upgrade Oxydra"
    )]
    SchemaTooNew {
        /// Host, port and database.
        location: String,
        /// `memory` or `runs`.
        component: &'static str,
        /// The version stored in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
}

impl PostgresError {
    /// The error of `action` on the database at `location`, from a driver error.
    pub(crate) fn query(
        location: &str,
        action: impl Into<String>,
        source: &dyn std::fmt::Display,
    ) -> Self {
        Self::Query {
            location: location.to_owned(),
            action: action.into(),
            message: source.to_string(),
        }
    }
}

/// A driver error's full message: tokio-postgres puts the server's own words (the
/// `ERROR:` line) in the source, not in the top-level text.
pub(crate) fn driver_message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{error}: {}", db.message()),
        None => match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        },
    }
}

impl From<PostgresError> for MemoryError {
    fn from(error: PostgresError) -> Self {
        match error {
            PostgresError::SchemaTooNew {
                location,
                found,
                supported,
                ..
            } => MemoryError::SchemaTooNew {
                location,
                found,
                supported,
            },
            PostgresError::Query {
                location,
                action,
                message,
            } => MemoryError::Storage {
                backend: BACKEND,
                location,
                action,
                message,
            },
            PostgresError::Connect { location, message } => MemoryError::Storage {
                backend: BACKEND,
                location,
                action: "connect".into(),
                message,
            },
            PostgresError::InvalidUrl { message } => MemoryError::Storage {
                backend: BACKEND,
                location: "(invalid URL)".into(),
                action: "parse the URL".into(),
                message,
            },
        }
    }
}

impl PostgresError {
    /// The coordinator's storage error for this failure while doing `action`.
    pub(crate) fn into_coordinator(self, action: &'static str) -> CoordinatorError {
        CoordinatorError::Storage {
            backend: BACKEND,
            action,
            message: self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_database_and_convert_keeping_it() {
        let error = PostgresError::Query {
            location: "db.lan:5432/oxydra".into(),
            action: "append to session ses_1".into(),
            message: "connection reset".into(),
        };
        let text = MemoryError::from(error).to_string();
        assert!(
            text.contains("postgres") && text.contains("db.lan:5432/oxydra"),
            "{text}"
        );
        assert!(
            text.contains("ses_1") && text.contains("connection reset"),
            "{text}"
        );
        let too_new = PostgresError::SchemaTooNew {
            location: "h:1/d".into(),
            component: "memory",
            found: 9,
            supported: 2,
        };
        assert!(matches!(
            MemoryError::from(too_new),
            MemoryError::SchemaTooNew { found: 9, .. }
        ));
    }
}
