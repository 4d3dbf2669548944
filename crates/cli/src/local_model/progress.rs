//! A one-line download progress bar on stderr, drawn only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use oxydra::local::DownloadProgress;

/// Redraws at most this often.
const REDRAW: Duration = Duration::from_millis(100);

/// The progress of one download, as the library's download reports it.
#[derive(Debug, Default)]
pub struct Progress {
    label: String,
    total: Option<u64>,
    done: u64,
    shown: bool,
    last: Option<Instant>,
}

impl Progress {
    /// A bar for `label`, of `total` bytes when known, starting at `done`.
    pub fn new(label: impl Into<String>, total: Option<u64>, done: u64) -> Self {
        Self {
            label: label.into(),
            total,
            done,
            shown: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn line(&self) -> String {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        match self.total {
            Some(total) if total > 0 => {
                let ratio = (self.done as f64 / total as f64).clamp(0.0, 1.0);
                let filled = (ratio * 30.0).round() as usize;
                format!(
                    "{} [{}{}] {:5.1}% {:.1}/{:.1} MiB",
                    self.label,
                    "#".repeat(filled),
                    "-".repeat(30 - filled.min(30)),
                    ratio * 100.0,
                    mib(self.done),
                    mib(total)
                )
            }
            _ => format!("{} {:.1} MiB", self.label, mib(self.done)),
        }
    }
}

impl DownloadProgress for Progress {
    fn start(&mut self, label: &str, total: Option<u64>, done: u64) {
        *self = Self::new(label, total, done);
    }

    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        if !self.shown || self.last.is_some_and(|last| last.elapsed() < REDRAW) {
            return;
        }
        self.last = Some(Instant::now());
        eprint!("\r{}", self.line());
        let _ = std::io::stderr().flush();
    }

    fn finish(&mut self) {
        if self.shown {
            eprintln!("\r{}", self.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shows_share_and_sizes() {
        let mut progress = Progress::new("model.gguf", Some(4 * 1024 * 1024), 1024 * 1024);
        progress.shown = false;
        progress.advance(1024 * 1024);
        assert_eq!(
            progress.line(),
            "model.gguf [###############---------------]  50.0% 2.0/4.0 MiB"
        );
        let unknown = Progress::new("m", None, 3 * 1024 * 1024 / 2);
        assert_eq!(unknown.line(), "m 1.5 MiB");
        let over = Progress::new("m", Some(1), 5);
        assert!(over.line().contains("100.0%"));
    }
}
