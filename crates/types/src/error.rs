//! The one error type of `oxydra-types`.

use thiserror::Error;

/// What can go wrong while reading the data model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TypesError {
    /// A tool call's raw argument string is not valid JSON.
    #[error(
        "arguments of tool call `{tool}` are not valid JSON: {message} (line {line}, column {column})"
    )]
    InvalidArguments {
        /// The tool the call named.
        tool: String,
        /// The JSON parser's message.
        message: String,
        /// 1-based line of the error in the raw string.
        line: usize,
        /// 1-based column of the error in the raw string.
        column: usize,
    },
    /// A progress-event `kind` string that is not one of the known kinds.
    #[error(
        "unknown progress kind `{0}` (expected provider_call, tool_execution or rolling_summary)"
    )]
    UnknownProgressKind(String),
    /// A content part's base64 data does not decode.
    #[error("the data of a `{kind}` content part is not valid base64: {message}")]
    InvalidPartData {
        /// The part's kind (`image`, `document`).
        kind: &'static str,
        /// The decoder's message.
        message: String,
    },
    /// A provenance source that is not `person`, `config`, `workspace`, `command`,
    /// `web:<url>` or `mcp:<server>`.
    #[error(
        "unknown source `{0}` (expected person, config, workspace, command, web:<url> or mcp:<server>)"
    )]
    UnknownSource(String),
}
