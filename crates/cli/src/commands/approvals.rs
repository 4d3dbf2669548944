//! `oxydra approvals list|approve|deny`: the tool calls waiting for a person on a
//! running `oxydra serve` (`--server URL`, token from `OXYDRA_TOKEN`). Approval ids
//! are unique across runs, so an id alone says which call: its run is looked up in
//! `GET /approvals`, then `POST /runs/{run}/approvals/{id}` decides it.

use std::io::Write;

use serde_json::{Value, json};

use crate::args::{ApprovalsAction, ApprovalsArgs, OutputFormat, ServerOptions};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::to_stdout;
use crate::remote::{Server, field, segment};

/// Runs `oxydra approvals …`.
pub async fn run(args: ApprovalsArgs) -> Result<Exit, CliError> {
    match args.action {
        ApprovalsAction::List { options } => list(&options).await,
        ApprovalsAction::Approve {
            id,
            for_session,
            options,
        } => {
            let decision = if for_session {
                "approve_for_session"
            } else {
                "approve_once"
            };
            decide(&id, json!({"decision": decision}), &options).await
        }
        ApprovalsAction::Deny {
            id,
            reason,
            options,
        } => {
            let body = match reason {
                Some(reason) => json!({"decision": "deny", "reason": reason}),
                None => json!({"decision": "deny"}),
            };
            decide(&id, body, &options).await
        }
    }
}

async fn list(options: &ServerOptions) -> Result<Exit, CliError> {
    let server = Server::from_flag(options.server.as_deref())?;
    let listed = server.get("/approvals").await?;
    let approvals = field(&listed, "approvals")
        .as_array()
        .cloned()
        .unwrap_or_default();
    let format = options.format();
    to_stdout(format, |out| {
        for approval in &approvals {
            match format {
                OutputFormat::Jsonl => {
                    serde_json::to_writer(&mut *out, approval)?;
                    writeln!(out)?;
                }
                OutputFormat::Text => write_approval(out, approval)?,
            }
        }
        if approvals.is_empty() && format == OutputFormat::Text {
            writeln!(out, "no approvals waiting")?;
        }
        Ok(())
    })?;
    Ok(Exit::Done)
}

/// One waiting approval for people: its ids and tool, then what it will do.
fn write_approval(out: &mut impl Write, approval: &Value) -> std::io::Result<()> {
    let text = |key: &str| approval[key].as_str().unwrap_or("?");
    writeln!(
        out,
        "{}  run {} ({})  {}",
        text("approval_id"),
        text("run_id"),
        text("agent_name"),
        text("tool")
    )?;
    let preview = &approval["preview"];
    match preview["kind"].as_str() {
        Some("command") => writeln!(
            out,
            "  command: {}",
            preview["command"].as_str().unwrap_or("")
        )?,
        Some("url") => writeln!(out, "  url: {}", preview["url"].as_str().unwrap_or(""))?,
        Some("diff") => {
            for line in preview["diff"].as_str().unwrap_or("").lines() {
                writeln!(out, "  {line}")?;
            }
        }
        _ => {
            for line in text("arguments").lines() {
                writeln!(out, "  {line}")?;
            }
        }
    }
    writeln!(
        out,
        "  decide: oxydra approvals approve {0} | oxydra approvals deny {0} --reason …",
        text("approval_id")
    )
}

async fn decide(id: &str, body: Value, options: &ServerOptions) -> Result<Exit, CliError> {
    let server = Server::from_flag(options.server.as_deref())?;
    let listed = server.get("/approvals").await?;
    let run_id = field(&listed, "approvals")
        .as_array()
        .into_iter()
        .flatten()
        .find(|approval| approval["approval_id"] == id)
        .and_then(|approval| approval["run_id"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| CliError::Api {
            server: server.base().to_owned(),
            status: 404,
            code: "approval_not_found".into(),
            message: format!(
                "no approval `{id}` waits (it was decided, lapsed, or its run ended); \
                 `oxydra approvals list` shows those that wait"
            ),
        })?;
    let run = server
        .post(
            &format!("/runs/{}/approvals/{}", segment(&run_id), segment(id)),
            &body,
        )
        .await?;
    let format = options.format();
    let decision = field(&body, "decision").as_str().unwrap_or("?").to_owned();
    to_stdout(format, |out| match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &run)?;
            writeln!(out)
        }
        OutputFormat::Text => writeln!(
            out,
            "{decision}: {id} (run {run_id} is now {})",
            field(&run, "status").as_str().unwrap_or("?")
        ),
    })?;
    Ok(Exit::Done)
}
