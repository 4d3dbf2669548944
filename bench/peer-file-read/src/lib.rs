//! The `file_read` tool of the peers of `cargo xtask peer-cost` (`bench/peer-*`): the
//! name, description, parameter schema and behaviour every peer gives its framework,
//! so that the frameworks differ only in their own agent loop.
//!
//! It reads a text file below the workspace from a given line on, as Oxydra's
//! `file_read` does on the scenario: `path` relative to the workspace (no `..`, no
//! absolute path), `offset` the first line returned, from 1.

use std::path::{Component, Path};

use serde::Deserialize;

/// The tool's name, as the scripted model calls it.
pub const NAME: &str = "file_read";

/// The tool's description, as each peer declares it.
pub const DESCRIPTION: &str = "Read a text file in the workspace. Use offset (first line, from 1).";

/// The JSON schema of the tool's arguments.
pub fn parameters() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Relative to the workspace."},
            "offset": {"type": "integer", "minimum": 1}
        },
        "required": ["path"]
    })
}

/// The arguments of `file_read`, as Oxydra's tool takes them.
#[derive(Debug, Deserialize)]
pub struct ReadArgs {
    /// Relative to the workspace.
    pub path: String,
    /// First line to return, from 1.
    pub offset: Option<usize>,
}

/// Reads `args.path` below `workspace` from line `args.offset` on (each line ending
/// in a line feed); the error says which path failed and why.
pub async fn read(workspace: &Path, args: &ReadArgs) -> Result<String, String> {
    let relative = Path::new(&args.path);
    if !relative
        .components()
        .all(|part| matches!(part, Component::Normal(_)))
    {
        return Err(format!("{} is outside the workspace", args.path));
    }
    let text = tokio::fs::read_to_string(workspace.join(relative))
        .await
        .map_err(|e| format!("{}: {e}", args.path))?;
    let skip = args.offset.unwrap_or(1).saturating_sub(1);
    Ok(text
        .lines()
        .skip(skip)
        .fold(String::new(), |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        }))
}
