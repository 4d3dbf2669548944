//! `oxydra runs list|show|watch|cancel`: the runs of a running `oxydra serve`
//! (`--server URL`, token from `OXYDRA_TOKEN`). Text for people, one line per run
//! (or event); `--output jsonl` the API's JSON, one object per line.

use std::io::Write;

use serde_json::Value;

use crate::args::{OutputFormat, RunsAction, RunsArgs, RunsListArgs, ServerOptions};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::{age, to_stdout};
use crate::remote::events::{RunEvent, follow};
use crate::remote::{Server, field, segment};

/// Runs `oxydra runs …`.
pub async fn run(args: RunsArgs) -> Result<Exit, CliError> {
    match args.action {
        RunsAction::List(list) => list_runs(&list).await,
        RunsAction::Show { id, options } => show(&id, &options).await,
        RunsAction::Watch { id, options } => watch(&id, &options).await,
        RunsAction::Cancel { id, options } => cancel(&id, &options).await,
    }
}

async fn list_runs(args: &RunsListArgs) -> Result<Exit, CliError> {
    let server = Server::from_flag(args.options.server.as_deref())?;
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in [
        ("status", args.status.clone()),
        ("agent", args.agent.clone()),
        ("since", args.since.clone()),
        ("limit", args.limit.map(|limit| limit.to_string())),
        ("cursor", args.cursor.clone()),
    ] {
        if let Some(value) = value {
            query.append_pair(key, &value);
        }
    }
    let query = query.finish();
    let path = if query.is_empty() {
        "/runs".to_owned()
    } else {
        format!("/runs?{query}")
    };
    let page = server.get(&path).await?;
    let runs = field(&page, "runs").as_array().cloned().unwrap_or_default();
    let format = args.options.format();
    let now = now_ms();
    to_stdout(format, |out| {
        for run in &runs {
            match format {
                OutputFormat::Jsonl => {
                    serde_json::to_writer(&mut *out, run)?;
                    writeln!(out)?;
                }
                OutputFormat::Text => writeln!(out, "{}", run_line(run, now))?,
            }
        }
        if runs.is_empty() && format == OutputFormat::Text {
            writeln!(out, "no runs")?;
        }
        Ok(())
    })?;
    if let Some(cursor) = field(&page, "next_cursor").as_str() {
        eprintln!("more: oxydra runs list --cursor {cursor}");
    }
    Ok(Exit::Done)
}

/// One run on one line: id, status, agent, when, what it used.
pub fn run_line(run: &Value, now: i64) -> String {
    let text = |key: &str| run[key].as_str().unwrap_or("?").to_owned();
    let usage = &run["usage"];
    let waits = run["pending_approvals"].as_array().map_or(0, Vec::len);
    let mut line = format!(
        "{}  {:<16}  {:<16}  {:<12}  turns {}  ${:.4}",
        text("run_id"),
        text("status"),
        text("agent_name"),
        age(run["created_at"].as_i64().unwrap_or(now), now),
        usage["turns"].as_u64().unwrap_or(0),
        usage["cost"].as_f64().unwrap_or(0.0),
    );
    if waits > 0 {
        line.push_str(&format!("  ({waits} waiting for approval)"));
    }
    if let Some(error) = run["error"].as_object() {
        let kind = error.get("kind").and_then(Value::as_str).unwrap_or("error");
        line.push_str(&format!("  {kind}"));
    }
    line
}

async fn show(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let server = Server::from_flag(options.server.as_deref())?;
    let run = server.get(&format!("/runs/{}", segment(id))).await?;
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
    let server = Server::from_flag(options.server.as_deref())?;
    let run = server.delete(&format!("/runs/{}", segment(id))).await?;
    let format = options.format();
    to_stdout(format, |out| match format {
        OutputFormat::Jsonl => {
            serde_json::to_writer(&mut *out, &run)?;
            writeln!(out)
        }
        OutputFormat::Text => writeln!(out, "{}", run_line(&run, now_ms())),
    })?;
    Ok(Exit::Done)
}

async fn watch(id: &str, options: &ServerOptions) -> Result<Exit, CliError> {
    let server = Server::from_flag(options.server.as_deref())?;
    let format = options.format();
    let mut status = String::new();
    let mut exit = Exit::Done;
    follow(&server, id, |event| {
        if let Some(now) = field(&event.data, "status").as_str() {
            status = now.to_owned();
        }
        if event.kind == "end" {
            exit = match status.as_str() {
                "completed" => Exit::Done,
                "cancelled" => Exit::Cancelled,
                _ => Exit::Runtime,
            };
        }
        let line = event_line(event, format);
        to_stdout(format, |out| writeln!(out, "{line}"))?;
        Ok(true)
    })
    .await?;
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
            if let Some(text) = field(field(data, "result"), "text").as_str() {
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
