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
    /// The path is protected: another program runs or loads it, or it is one of
    /// Oxydra's own files (configuration, database, trust store).
    #[error("refused: `{path}` is {what}; it may not be {verb} by the file tools{hint}")]
    Protected {
        /// The path the model gave.
        path: String,
        /// What the file is, and which program runs or loads it.
        what: String,
        /// What was refused (`changed`, `read`).
        verb: &'static str,
        /// How the write could be allowed, or that a person declined it (may be empty).
        hint: String,
    },
    /// The sandbox mode forbids every change to the workspace (`read-only`): a tool
    /// that writes refuses, whatever the path.
    #[error(
        "refused: the sandbox is {mode} (`--sandbox {mode}`); nothing in the workspace may \
         be changed, so `{tool}` did not run"
    )]
    ReadOnlySandbox {
        /// The tool that was refused.
        tool: String,
        /// The mode (`read-only`).
        mode: &'static str,
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
    /// The file or directory a call named does not exist.
    #[error("`{path}` does not exist in the workspace")]
    NotFound {
        /// The path, relative to the workspace.
        path: String,
    },
    /// Some of the tool names asked for are not known.
    #[error("unknown tool(s): {}; available: {}", unknown.join(", "), available.join(", "))]
    UnknownTools {
        /// The names nobody provides.
        unknown: Vec<String>,
        /// The names that are available.
        available: Vec<String>,
    },
    /// A shell command ran out of time; its whole process group was killed.
    #[error(
        "command timed out after {secs} s and was killed (with its process group)\n{partial_output}"
    )]
    CommandTimedOut {
        /// The limit that applied.
        secs: u64,
        /// What the command printed before it was killed (already truncated).
        partial_output: String,
    },
    /// The kernel cannot enforce the command sandbox, so a confined command is refused.
    #[error(
        "refused: the command sandbox is unavailable ({reason}); commands run only with \
         the sandbox mode `full-access`"
    )]
    SandboxUnavailable {
        /// Why the sandbox is unavailable.
        reason: String,
    },
    /// Preparing the command sandbox failed; the command was not started.
    #[error("the command sandbox failed while {action}: {reason}")]
    Sandbox {
        /// What the sandbox was doing.
        action: &'static str,
        /// The failure.
        reason: String,
    },
    /// Any other failure, described for the model.
    #[error("{0}")]
    Failed(String),
}
