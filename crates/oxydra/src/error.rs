//! The facade's own errors: only its OpenTelemetry set-up can fail.

/// Why OpenTelemetry export could not be set up (feature `otel`).
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
