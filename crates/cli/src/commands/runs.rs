//! `oxydra runs list|show|watch|cancel|changes|revert`: the runs of a running `oxydra serve`
//! (`--server URL`, token from `OXYDRA_TOKEN`). Text for people, one line per run
//! (or event); `--output jsonl` the API's JSON, one object per line.

use std::io::Write;

use futures::StreamExt;
use oxydra::coordinator::Run;
use oxydra::coordinator::client::{RunEvent, RunFilter};
use serde_json::Value;

use crate::args::{OutputFormat, RunsAction, RunsArgs, RunsListArgs, ServerOptions};
use crate::config::{remote_error, server_client};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::{age, to_stdout};

/// Runs `oxydra runs …`.
pub async fn run(args: RunsArgs) -> Result<Exit, CliError> {
    match args.action {
        RunsAction::List(list) => list_runs(&list).await,
        RunsAction::Show { id, options } => show(&id, &options).await,
        RunsAction::Watch { id, options } => watch(&id, &options).await,
        RunsAction::Cancel { id, options } => cancel(&id, &options).await,
        RunsAction::Changes { id, options } => super::runs_changes::changes(&id, &options).await,
        RunsAction::Revert {
            id,
            to,
            force,
            options,
        } => super::runs_changes::revert(&id, to, force, &options).await,
    }
}

async fn list_runs(args: &RunsListArgs) -> Result<Exit, CliError> {
    let client = server_client(args.options.server.as_deref())?;
    let filter = RunFilter {
        status: args.status.clone(),
        agent: args.agent.clone(),
        since: args.since.clone(),
        limit: args.limit,
        cursor: args.cursor.clone(),
    };
    let page = client.list_runs(&filter).await.map_err(remote_error)?;
    let format = args.options.format();
    let now = now_ms();
    to_stdout(format, |out| {
        for run in &page.runs {
            write_run(out, run, format, now)?;
        }
        if page.runs.is_empty() && format == OutputFormat::Text {
            writeln!(out, "no runs")?;
        }
        Ok(())
    })?;
    if let Some(cursor) = &page.next_cursor {
        eprintln!("more: oxydra runs list --cursor {cursor}");
    }
    Ok(Exit::Done)
}

/// `run` as one JSON line, or as [`run_line`].
fn write_run(
    out: &mut impl Write,
    run: &Run,
    format: OutputFormat,
    now: i64,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, run)?;
            writeln!(out)
        }
        OutputFormat::Text => writeln!(out, "{}", run_line(run, now)),
    }
}

/// One run on one line: id, status, agent, when, what it used.
pub fn run_line(run: &Run, now: i64) -> String {
    let waits = run.pending_approvals.len();
    let mut line = format!(
        "{}  {:<16}  {:<16}  {:<12}  turns {}  ${:.4}",
        run.run_id,
        run.status.as_str(),
        run.agent_name,
        age(run.created_at, now),
        run.usage.turns,
        run.usage.cost,
    );
    if waits > 0 {
        line.push_str(&format!("  ({waits} waiting for approval)"));
    }
    if let Some(error) = &run.error {
        line.push_str(&format!("  {}", error.kind));
    }
    line
}

async fn show(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let client = server_client(options.server.as_deref())?;
    let run = client.run(id).await.map_err(remote_error)?;
    let format = options.format();
    to_stdout(format, |out| {
        match format {
            OutputFormat::Jsonl => serde_json::to_writer(&mut *out, &run)?,
            OutputFormat::Text => serde_json::to_writer_pretty(&mut *out, &run)?,
        }
        writeln!(out)
    })?;
    Ok(Exit::Done)
}

async fn cancel(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let client = server_client(options.server.as_deref())?;
    let run = client.cancel(id).await.map_err(remote_error)?;
    let format = options.format();
    to_stdout(format, |out| write_run(out, &run, format, now_ms()))?;
    Ok(Exit::Done)
}

async fn watch(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let client = server_client(options.server.as_deref())?;
    let format = options.format();
    let mut status = String::new();
    let mut exit = Exit::Done;
    let mut events = Box::pin(client.events(id, None));
    while let Some(event) = events.next().await {
        let event = event.map_err(remote_error)?;
        if let Some(now) = event.data.get("status").and_then(Value::as_str) {
            now.clone_into(&mut status);
        }
        if event.kind == "end" {
            exit = match status.as_str() {
                "completed" => Exit::Done,
                "cancelled" => Exit::Cancelled,
                _ => Exit::Runtime,
            };
        }
        let line = event_line(&event, format);
        to_stdout(format, |out| writeln!(out, "{line}"))?;
    }
    Ok(exit)
}

/// One event as `watch` prints it.
fn event_line(event: &RunEvent, format: OutputFormat) -> String {
    if format == OutputFormat::Jsonl {
        return serde_json::json!({"type": event.kind, "id": event.id, "data": event.data})
            .to_string();
    }
    let data = &event.data;
    match event.kind.as_str() {
        "message" => {
            let message = &data["message"];
            let role = message["role"].as_str().unwrap_or("?");
            let mut line = format!("{role}: {}", message["content"].as_str().unwrap_or(""));
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                line.push_str(&format!(
                    "\n  → {} {}",
                    call["name"].as_str().unwrap_or("?"),
                    call["arguments"]
                ));
            }
            line
        }
        "run" | "end" => {
            let mut line = format!("[{}]", data["status"].as_str().unwrap_or("?"));
            for approval in data["pending_approvals"].as_array().into_iter().flatten() {
                line.push_str(&format!(
                    "\n  waits for approval {} of {}: oxydra approvals approve {} (or deny)",
                    approval["approval_id"].as_str().unwrap_or("?"),
                    approval["tool"].as_str().unwrap_or("?"),
                    approval["approval_id"].as_str().unwrap_or("?"),
                ));
            }
            let result = data.get("result").and_then(|result| result.get("text"));
            if let Some(text) = result.and_then(Value::as_str) {
                line.push_str(&format!("\n{text}"));
            }
            if let Some(error) = data["error"].as_object() {
                line.push_str(&format!(
                    "\n{}: {}",
                    error.get("kind").and_then(Value::as_str).unwrap_or("error"),
                    error.get("message").and_then(Value::as_str).unwrap_or("")
                ));
            }
            line
        }
        other => format!("[{other}] {data}"),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}
