//! The one error type of `oxydra-tools`.

use std::path::PathBuf;

use thiserror::Error;

/// Why a tool call (or registering a tool) failed. The executor turns these into the
/// `Tool execution failed: …` message the model corrects itself from.
#[derive(Debug, Error)]
pub enum ToolError {
    /// A tool with this name is already registered.
    #[error("a tool named `{name}` is already registered")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The arguments are well-formed JSON but unusable.
    #[error("invalid arguments: {message}")]
    InvalidArguments {
        /// What is wrong with them.
        message: String,
    },
    /// A path leads outside the workspace.
    #[error("path `{path}` is outside the workspace {}", workspace.display())]
    OutsideWorkspace {
        /// The path the model gave.
        path: String,
        /// The workspace root.
        workspace: PathBuf,
    },
    /// A network destination the policy refuses.
    #[error("refused to fetch `{url}`: {reason}")]
    NetworkRefused {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// An I/O error on a file the call named.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What the tool was doing (`reading`, `writing`, …).
        action: &'static str,
        /// The path (relative to the workspace).
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The call ran out of time.
    #[error("timed out after {secs} s")]
    Timeout {
        /// The limit.
        secs: u64,
    },
    /// Any other failure, described for the model.
    #[error("{0}")]
    Failed(String),
}
