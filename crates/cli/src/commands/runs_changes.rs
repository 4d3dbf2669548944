//! `oxydra runs changes ID` and `oxydra runs revert ID [--to N] [--force]`: what a run
//! of a running `oxydra serve` changed in the workspace, and taking it back (`GET
//! /runs/{id}/changes`, `POST /runs/{id}/revert`). Text for people (paths and diffs
//! through the terminal sanitizer: they are the workspace's); `--output jsonl` the
//! API's JSON on one line.

use std::io::Write;

use oxydra::coordinator::client::Client;
use oxydra::coordinator::{CoordinatorError, RevertRequest, RunChanges, RunReverted};

use crate::args::{OutputFormat, ServerOptions};
use crate::config::{remote_error, server_client};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::to_stdout;

/// `oxydra runs changes ID`.
pub async fn changes(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let client: Client = server_client(options.server.as_deref())?;
    let changes = client.changes(id).await.map_err(remote_error)?;
    let format = options.format();
    to_stdout(format, |out| match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &changes)?;
            writeln!(out)
        }
        OutputFormat::Text => out.write_all(changes_text(&changes).as_bytes()),
    })?;
    Ok(Exit::Done)
}

/// A run's changes as text: per turn, each path with its kind, counts and diff.
pub fn changes_text(changes: &RunChanges) -> String {
    if changes.turns.is_empty() {
        return format!("run {} changed no file\n", changes.run_id);
    }
    let mut text = String::new();
    for turn in &changes.turns {
        let reverted = if turn.undone { " (reverted)" } else { "" };
        text.push_str(&format!(
            "turn {}{reverted}: {} path(s)\n",
            turn.turn,
            turn.paths.len()
        ));
        for path in &turn.paths {
            let kind = serde_json::to_value(path.kind)
                .ok()
                .and_then(|kind| kind.as_str().map(str::to_owned))
                .unwrap_or_default();
            let counts = match (path.lines_added, path.lines_removed) {
                (Some(added), Some(removed)) => format!(" (+{added} -{removed})"),
                _ => String::new(),
            };
            text.push_str(&format!("  {kind} {}{counts}\n", path.path));
            for line in path.diff.as_deref().unwrap_or_default().lines() {
                text.push_str(&format!("    {line}\n"));
            }
            if path.diff_truncated {
                text.push_str("    [diff cut]\n");
            }
        }
        for missing in &turn.not_captured {
            text.push_str(&format!(
                "  not kept: {} ({})\n",
                missing.path,
                missing.why()
            ));
        }
        for tool in &turn.irreversible {
            text.push_str(&format!("  cannot be reverted: a `{tool}` call\n"));
        }
    }
    text
}

/// `oxydra runs revert ID [--to N] [--force]`.
pub async fn revert(
    id: &str,
    to: Option<u64>,
    force: bool,
    options: &ServerOptions,
) -> Result<Exit, CliError> {
    let client: Client = server_client(options.server.as_deref())?;
    let request = RevertRequest { to_turn: to, force };
    let reverted = client.revert(id, &request).await.map_err(refused)?;
    let format = options.format();
    to_stdout(format, |out| match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &reverted)?;
            writeln!(out)
        }
        OutputFormat::Text => out.write_all(reverted_text(&reverted).as_bytes()),
    })?;
    Ok(Exit::Done)
}

/// What a revert did, as text.
pub fn reverted_text(reverted: &RunReverted) -> String {
    if reverted.turns.is_empty() {
        return format!("run {}: nothing to revert\n", reverted.run_id);
    }
    let turns: Vec<String> = reverted.turns.iter().map(u64::to_string).collect();
    let mut text = format!(
        "reverted run {}: turn(s) {}; {} path(s) put back\n",
        reverted.run_id,
        turns.join(", "),
        reverted.restored.len()
    );
    for path in &reverted.restored {
        text.push_str(&format!("  {path}\n"));
    }
    for missing in &reverted.not_captured {
        text.push_str(&format!(
            "  not put back: {} ({})\n",
            missing.path,
            missing.why()
        ));
    }
    for call in &reverted.irreversible {
        text.push_str(&format!("  cannot be reverted: {call}\n"));
    }
    text
}

/// A refused revert as the CLI's error; files changed since say how to overwrite.
fn refused(error: CoordinatorError) -> CliError {
    let conflicts =
        matches!(&error, CoordinatorError::Client { code, .. } if code == "revert_conflicts");
    match remote_error(error) {
        CliError::Api {
            server,
            status,
            code,
            message,
        } if conflicts => CliError::Api {
            server,
            status,
            code,
            message: format!("{message} (run with --force to overwrite them)"),
        },
        other => other,
    }
}
