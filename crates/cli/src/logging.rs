//! Logs on stderr: `RUST_LOG` when set, else warnings (`-v` debug, `-vv` trace for Oxydra).
//! `run` and `chat` (a person reading the answer) show only errors, and the store's
//! warnings about its file's permissions, without timestamps: what a person must know
//! is said by the command itself, in words, on a line of its own — an internal warning
//! must not land amid a streamed answer. `-v` shows every warning.
//!
//! Colours only when stderr is a terminal. Each line is written through the text
//! renderer's [`write_stderr_lines`], so it never shares a line with the spinner.
//!
//! Every log line is written through [`ScrubbingWriter`], so an error value logged with
//! `%error` (a provider's 401 body, a tool's failure) never shows a secret.
//!
//! With the `otel` feature, `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) also exports the spans over OTLP/HTTP
//! (`oxydra::otel`), whatever the log level; [`shutdown`] flushes them before exit.

use std::io::{self, IsTerminal, Write};

use oxydra::scrubbing::scrub;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::error::CliError;
use crate::output::write_stderr_lines;

/// Installs the stderr subscriber, and the span export when the environment asks for
/// it. A bad export setting is an error naming its variable; the stderr logs are
/// installed all the same.
pub fn init(verbose: u8, for_a_person: bool) -> Result<(), CliError> {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter(verbose, for_a_person)));
    let quiet = verbose == 0 && for_a_person;
    let stderr_logs = tracing_subscriber::fmt::layer()
        .with_writer(Scrubbing(|| StderrLines))
        .with_ansi(io::stderr().is_terminal())
        .with_target(verbose > 0);
    let stderr_logs = if quiet {
        stderr_logs.without_time().with_filter(filter).boxed()
    } else {
        stderr_logs.with_filter(filter).boxed()
    };
    let registry = tracing_subscriber::registry().with(stderr_logs);
    let (export, result) = export::layer();
    let _ = registry.with(export).try_init();
    result
}

/// The log filter without `RUST_LOG`: see the module comment.
fn default_filter(verbose: u8, for_a_person: bool) -> &'static str {
    match (verbose, for_a_person) {
        (0, true) => "error,oxydra_memory=warn",
        (0, false) => "warn",
        (1, _) => "warn,oxydra=debug",
        _ => "info,oxydra=trace",
    }
}

/// Flushes the spans not yet exported and stops the exporter, waiting at most its
/// export timeout. Call it once, before the process exits.
pub fn shutdown() {
    export::shutdown();
}

#[cfg(feature = "otel")]
mod export {
    use std::sync::{Mutex, MutexGuard, PoisonError};

    use oxydra::otel::{OtelConfig, OtelError, OtelGuard, OtelLayer};
    use tracing::Subscriber;
    use tracing_subscriber::registry::LookupSpan;

    use crate::error::CliError;

    /// The running export, taken by [`shutdown`].
    static GUARD: Mutex<Option<OtelGuard>> = Mutex::new(None);

    fn guard() -> MutexGuard<'static, Option<OtelGuard>> {
        GUARD.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The export layer when the environment asks for one (its guard kept for
    /// [`shutdown`]), and whether the environment was fine.
    pub fn layer<S>() -> (Option<OtelLayer<S>>, Result<(), CliError>)
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let config = match OtelConfig::from_env() {
            Ok(Some(config)) => config,
            Ok(None) => return (None, Ok(())),
            Err(error) => return (None, Err(config_error(error))),
        };
        match oxydra::otel::init(&config) {
            Ok((layer, export)) => {
                *guard() = Some(export);
                (Some(layer), Ok(()))
            }
            // Not the user's doing, and no reason to refuse the run: it goes on
            // without export.
            Err(error) => {
                eprintln!("warning: spans will not be exported: {error}");
                (None, Ok(()))
            }
        }
    }

    pub fn shutdown() {
        let export = guard().take();
        if let Some(export) = export
            && let Err(error) = export.shutdown()
        {
            tracing::warn!(%error, "not every span was exported");
        }
    }

    /// A bad variable, as a configuration error naming it.
    fn config_error(error: OtelError) -> CliError {
        match error {
            OtelError::Endpoint { var, value, reason } => CliError::Env {
                var: var.to_owned(),
                message: format!("`{value}` is not an OTLP/HTTP endpoint URL: {reason}"),
            },
            OtelError::Variable { var, message } => CliError::Env {
                var: var.to_owned(),
                message,
            },
            other => CliError::Env {
                var: oxydra::otel::ENDPOINT_VAR.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

#[cfg(not(feature = "otel"))]
mod export {
    use crate::error::CliError;

    /// This build cannot export: say so when the environment asks for it.
    pub fn layer() -> (
        Option<tracing_subscriber::layer::Identity>,
        Result<(), CliError>,
    ) {
        for var in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ] {
            if std::env::var_os(var).is_some_and(|value| !value.is_empty()) {
                eprintln!(
                    "warning: {var} is set, but this oxydra was built without the `otel` feature: no span is exported"
                );
                break;
            }
        }
        (None, Ok(()))
    }

    pub fn shutdown() {}
}

/// Stderr, written through the renderer so that a log line clears the spinner first.
#[derive(Debug, Clone, Copy)]
pub struct StderrLines;

impl Write for StderrLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_stderr_lines(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A [`MakeWriter`] whose writers scrub what they are given before passing it on.
#[derive(Debug, Clone, Copy)]
pub struct Scrubbing<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Scrubbing<M> {
    type Writer = ScrubbingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubbingWriter(self.0.make_writer())
    }
}

/// Scrubs each buffer it is given (the formatter hands over one whole log line per
/// write) and writes the result to the inner writer.
#[derive(Debug)]
pub struct ScrubbingWriter<W>(W);

impl<W: Write> Write for ScrubbingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let scrubbed = scrub(&text);
        if scrubbed.is_clean() {
            self.0.write_all(buf)?;
        } else {
            self.0.write_all(scrubbed.text.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::test_support::SharedBuffer;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;

    #[test]
    fn a_logged_error_is_scrubbed() {
        let buffer = SharedBuffer::default();
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(Scrubbing(BoxMakeWriter::new(move || sink.clone())))
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let error = "status 401: {\"error\": \"bad key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\"}";
            tracing::warn!(%error, "provider failed");
            tracing::warn!(detail = "password=hunter2-very-secret", "tool failed");
        });
        let text = buffer.text();
        assert!(text.contains("provider failed"), "{text}");
        assert!(!text.contains("sk-proj-abcdefghij"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(text.matches("REDACTED").count(), 2, "{text}");
    }
}
