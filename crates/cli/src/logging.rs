//! Logs on stderr: `RUST_LOG` when set, else warnings (`-v` debug, `-vv` trace for Oxydra).
//!
//! Colours only when stderr is a terminal. Each line is written through the text
//! renderer's [`write_stderr_lines`], so it never shares a line with the spinner.
//!
//! Every log line is written through [`ScrubbingWriter`], so an error value logged with
//! `%error` (a provider's 401 body, a tool's failure) never shows a secret.

use std::io::{self, IsTerminal, Write};

use oxydra::scrubbing::scrub;

use crate::output::write_stderr_lines;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Installs the stderr subscriber.
pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "warn,oxydra=debug",
        _ => "info,oxydra=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Scrubbing(|| StderrLines))
        .with_ansi(io::stderr().is_terminal())
        .with_target(verbose > 0)
        .try_init();
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
