//! `oxydra approvals list|approve|deny`: the tool calls waiting for a person on a
//! running `oxydra serve` (`--server URL`, token from `OXYDRA_TOKEN`). Approval ids
//! are unique across runs, so an id alone says which call: its run is looked up in
//! `GET /approvals`, then `POST /runs/{run}/approvals/{id}` decides it.

use std::io::Write;

use oxydra::coordinator::client::Client;
use oxydra::coordinator::{ApprovalDecision, ApprovalPreview, ApprovalView};

use crate::args::{ApprovalsAction, ApprovalsArgs, OutputFormat, ServerOptions};
use crate::config::{remote_error, server_client};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::to_stdout;

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
                ApprovalDecision::ApproveForSession
            } else {
                ApprovalDecision::ApproveOnce
            };
            decide(&id, &decision, &options).await
        }
        ApprovalsAction::Deny {
            id,
            reason,
            options,
        } => decide(&id, &ApprovalDecision::Deny { reason }, &options).await,
    }
}

async fn list(options: &ServerOptions) -> Result<Exit, CliError> {
    let client = server_client(options.server.as_deref())?;
    let approvals = client.list_approvals().await.map_err(remote_error)?;
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

/// One waiting approval for people: its ids and tool, why a person must decide, then
/// what it will do.
fn write_approval(out: &mut impl Write, view: &ApprovalView) -> std::io::Result<()> {
    let waiting = &view.waiting;
    let approval = &waiting.approval;
    writeln!(
        out,
        "{}  run {} ({})  {}",
        approval.approval_id, waiting.run_id, waiting.agent_name, approval.tool
    )?;
    if let Some(reason) = &approval.reason {
        // On one line: a line break in it cannot pass for another field.
        writeln!(out, "  why: {}", crate::terminal_text::one_line(reason))?;
    }
    match &view.preview {
        ApprovalPreview::Command { command } => writeln!(out, "  command: {command}")?,
        ApprovalPreview::Url { url } => writeln!(out, "  url: {url}")?,
        ApprovalPreview::Diff { diff, .. } => {
            for line in diff.lines() {
                writeln!(out, "  {line}")?;
            }
        }
        ApprovalPreview::Arguments { .. } => {
            for line in approval.arguments.lines() {
                writeln!(out, "  {line}")?;
            }
        }
    }
    writeln!(
        out,
        "  decide: oxydra approvals approve {0} | oxydra approvals deny {0} --reason …",
        approval.approval_id
    )
}

/// The run approval `id` belongs to, from what waits.
async fn run_of(client: &Client, id: &str) -> Result<String, CliError> {
    let waiting = client.list_approvals().await.map_err(remote_error)?;
    waiting
        .into_iter()
        .find(|view| view.waiting.approval.approval_id.as_str() == id)
        .map(|view| view.waiting.run_id)
        .ok_or_else(|| CliError::Api {
            server: client.base().to_owned(),
            status: 404,
            code: "approval_not_found".into(),
            message: format!(
                "no approval `{id}` waits (it was decided, lapsed, or its run ended); \
                 `oxydra approvals list` shows those that wait"
            ),
        })
}

async fn decide(
    id: &str,
    decision: &ApprovalDecision,
    options: &ServerOptions,
) -> Result<Exit, CliError> {
    let client = server_client(options.server.as_deref())?;
    let run_id = run_of(&client, id).await?;
    let run = client
        .decide(&run_id, id, decision)
        .await
        .map_err(remote_error)?;
    let format = options.format();
    to_stdout(format, |out| match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &run)?;
            writeln!(out)
        }
        OutputFormat::Text => writeln!(
            out,
            "{}: {id} (run {run_id} is now {})",
            decision.as_str(),
            run.status
        ),
    })?;
    Ok(Exit::Done)
}
