//! The facade's own errors: opening a database of the storage table (feature
//! `memory`) and setting up OpenTelemetry export (feature `otel`).

#[cfg(feature = "memory")]
use std::path::PathBuf;

/// Why a database could not be named or opened (see [`crate::storage`]). Messages
/// name the database without its password.
#[cfg(feature = "memory")]
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A URL of a known scheme that its backend refuses (checked without connecting).
    #[error("{url}: {reason}")]
    InvalidUrl {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The directory of a database file could not be created.
    #[error("cannot create the database directory {}: {source}", .dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The server of a database URL could not be reached, or refused the login or the
    /// migrations.
    #[error("{message}")]
    Connect {
        /// The backend (`PostgreSQL`).
        backend: &'static str,
        /// What the backend said.
        message: String,
    },
    /// The database could not be opened (or its blocking open did not finish).
    #[error("{message}")]
    Open {
        /// The backend (`SQLite`).
        backend: &'static str,
        /// What the backend said.
        message: String,
    },
}

/// Why OpenTelemetry export could not be set up (feature `otel`).
#[cfg(feature = "otel")]
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// An endpoint variable does not hold an `http` or `https` URL.
    #[error("{var}: `{value}` is not an OTLP/HTTP endpoint: {reason}")]
    Endpoint {
        /// The variable (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A variable has a value Oxydra cannot use (a protocol other than HTTP with
    /// protobuf, a timeout that is not a whole number of milliseconds, non-Unicode).
    #[error("{var}: {message}")]
    Variable {
        /// The variable.
        var: &'static str,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The HTTP client or the OTLP exporter could not be built.
    #[error("cannot set up the OTLP exporter: {message}")]
    Exporter {
        /// Why.
        message: String,
    },
    /// Shutting down did not export every span in time (or at all).
    #[error("OpenTelemetry shutdown: {message}")]
    Shutdown {
        /// Why.
        message: String,
    },
}
