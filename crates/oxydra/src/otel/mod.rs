//! OpenTelemetry export (feature `otel`): Oxydra's spans, with the GenAI semantic
//! conventions they carry (`gen_ai.operation.name`, `gen_ai.request.model`,
//! `gen_ai.usage.*`, `gen_ai.tool.*`, …), sent over OTLP/HTTP with protobuf bodies.
//!
//! [`init`] builds a `tracing` layer to add to your subscriber and a guard that
//! flushes and shuts the exporter down (bounded by the export timeout) when dropped or
//! [`OtelGuard::shutdown`] is called. Export is batched on a thread of its own: a slow
//! or unreachable collector never blocks the agent, and when the queue is full spans
//! are dropped, not held. Every text a span carries is scrubbed before it is sent.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318, OTEL_SERVICE_NAME=…
//! let otel = oxydra::otel::OtelConfig::from_env()?
//!     .map(|config| oxydra::otel::init(&config))
//!     .transpose()?;
//! let (layer, guard) = match otel {
//!     Some((layer, guard)) => (Some(layer), Some(guard)),
//!     None => (None, None),
//! };
//! tracing_subscriber::registry().with(layer).init();
//! // … run agents …
//! if let Some(guard) = guard {
//!     guard.shutdown()?; // or let it drop
//! }
//! # Ok(())
//! # }
//! ```

mod config;
mod conventions;
mod processor;
mod scrub;

use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{Filtered, Targets};
use tracing_subscriber::registry::LookupSpan;

pub use crate::error::OtelError;
pub use config::{
    DEFAULT_SERVICE_NAME, DEFAULT_TIMEOUT, ENDPOINT_VAR, OtelConfig, SDK_DISABLED_VAR,
    SERVICE_NAME_VAR, TRACES_ENDPOINT_VAR, default_targets,
};

use processor::ExportProcessor;

/// The `tracing` layer [`init`] returns: spans of the configured targets, to the
/// OpenTelemetry tracer.
pub type OtelLayer<S> = Filtered<OpenTelemetryLayer<S, SdkTracer>, Targets, S>;

/// How much longer than one export the shutdown may wait for the last one.
const SHUTDOWN_MARGIN: Duration = Duration::from_millis(500);

/// Sets up OTLP/HTTP export as `config` says and returns the layer that feeds it and
/// the guard that flushes it. Nothing is sent until a span ends; a collector that
/// cannot be reached is reported as a log warning, never as an error of the run.
///
/// Installs rustls' `ring` crypto provider as the process default if none is
/// installed yet (`oxydra_http::install_crypto_provider`: the exporter's HTTP client
/// has reqwest's own TLS set-up, which needs one).
pub fn init<S>(config: &OtelConfig) -> Result<(OtelLayer<S>, OtelGuard), OtelError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let endpoint = config::checked_endpoint("the OTLP endpoint", &config.endpoint)?;
    let client = http_client(config.timeout)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(config.timeout)
        .build()
        .map_err(|error| OtelError::Exporter {
            message: error.to_string(),
        })?;
    let processor = ExportProcessor::new(BatchSpanProcessor::builder(exporter).build());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build();
    let scope = InstrumentationScope::builder("oxydra")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let tracer = provider.tracer_with_scope(scope);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_filter(config.targets.clone());
    let guard = OtelGuard {
        provider: Some(provider),
        shutdown_timeout: config.timeout.saturating_add(SHUTDOWN_MARGIN),
    };
    Ok((layer, guard))
}

/// The blocking HTTP client the batch processor's thread sends with. It is built on
/// a thread of its own: a blocking client must not be built inside an async runtime.
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, OtelError> {
    oxydra_http::install_crypto_provider();
    let exporter_error = |message: String| OtelError::Exporter { message };
    std::thread::Builder::new()
        .name("otel-http-client".to_owned())
        .spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .map_err(|error| exporter_error(format!("cannot start a thread: {error}")))?
        .join()
        .map_err(|_| exporter_error("building the HTTP client panicked".to_owned()))?
        .map_err(|error| exporter_error(format!("cannot build the HTTP client: {error}")))
}

/// Flushes the spans not yet sent and stops the exporter, when dropped or on
/// [`OtelGuard::shutdown`]; either waits at most the export timeout (plus a little).
#[derive(Debug)]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
    shutdown_timeout: Duration,
}

impl OtelGuard {
    /// Exports what is left and stops, saying whether every span went out in time.
    /// Call it outside async code (or from `spawn_blocking`): it blocks until the
    /// last export is done or the timeout passes.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), OtelError> {
        match self.provider.take() {
            Some(provider) => provider
                .shutdown_with_timeout(self.shutdown_timeout)
                .map_err(|error| OtelError::Shutdown {
                    message: error.to_string(),
                }),
            None => Ok(()),
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
