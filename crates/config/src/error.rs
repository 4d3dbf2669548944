//! What can go wrong reading a configuration file or the trust store. Every variant
//! names the file; the key and the line where they are known.

use std::path::PathBuf;

/// An error reading the configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--config` (or the embedder) names a file that does not exist.
    #[error("{}: configuration file not found (given with --config)", path.display())]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}: line {line}, column {column}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The file has a key no table knows.
    #[error("{}: unknown key `{key}` {table} (expected one of {expected}){}", path.display(), at_line(*line))]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The unknown key.
        key: String,
        /// Where: `in [runtime]`, `at the top level`.
        table: String,
        /// The keys the table accepts.
        expected: String,
        /// 1-based line, if known.
        line: Option<usize>,
    },
    /// A key has a bad type or value.
    #[error("{}: {message}{}", path.display(), at_line(*line))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The dotted key (`runtime.max_turns`).
        key: String,
        /// What is wrong, naming the key and the expected type.
        message: String,
        /// 1-based line, if known.
        line: Option<usize>,
    },
    /// A directory or file (of the trust store) could not be created or written.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The trust store cannot be read or written.
    #[error("trust store {}: {message}", path.display())]
    TrustStore {
        /// The store's file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// Whether the configuration is at fault (a usage error), rather than the system
    /// (a file that exists but cannot be read).
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::ReadFile { .. } | Self::Io { .. })
    }
}

/// ` at line N`, or nothing.
fn at_line(line: Option<usize>) -> String {
    line.map(|line| format!(" at line {line}"))
        .unwrap_or_default()
}
