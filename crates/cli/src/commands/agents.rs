//! `oxydra agents list`: the `[[agents]]` blueprints as the coordinator serves them
//! (`GET /agents`): name, type, description and, for deterministic agents, the
//! parameters. `text` is a table for people (each parameter with its type and whether
//! it is required); `jsonl` one `GET /agents` entry per line, schema included.

use std::io::Write;

use oxydra::coordinator::{AgentListing, BlueprintSummary};
use serde_json::Value;

use crate::args::{AgentsAction, AgentsArgs, ListOptions, OutputFormat};
use crate::error::CliError;
use crate::exit_code::Exit;

use crate::setup::service;

/// Runs `oxydra agents …`.
pub async fn run(args: AgentsArgs) -> Result<Exit, CliError> {
    match args.action {
        AgentsAction::List(options) => list(&options).await,
    }
}

async fn list(options: &ListOptions) -> Result<Exit, CliError> {
    let settings = service::settings(&options.run_options())?;
    let service = service::start(&settings, service::Purpose::List, None).await?;
    let listing = service.coordinator.list_blueprints().await;
    service.stop().await;
    let listing = listing.map_err(|error| CliError::Coordinator(error.to_string()))?;
    if listing.agents.is_empty() {
        eprintln!("no agents configured; add [[agents]] entries (docs/coordinator.md)");
        return Ok(Exit::Done);
    }
    let mut text = Vec::new();
    write_listing(&mut text, &listing, options.output).map_err(CliError::stdout)?;
    // Descriptions of MCP tools come from their servers: the terminal sanitizer (text)
    // or JSON escapes (the same JSON), on a terminal or not.
    let text = crate::output::listing::shown(options.output, &text);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}

/// `text`: a line per agent (name, type, description), then its parameters;
/// `jsonl`: one agent per line, as `GET /agents` gives it.
fn write_listing(
    out: &mut impl Write,
    listing: &AgentListing,
    format: OutputFormat,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => {
            let name_width = listing
                .agents
                .iter()
                .map(|agent| agent.name.chars().count())
                .max()
                .unwrap_or(0);
            for agent in &listing.agents {
                write_agent(out, agent, name_width)?;
            }
            Ok(())
        }
        OutputFormat::Jsonl => {
            for agent in &listing.agents {
                serde_json::to_writer(&mut *out, agent)?;
                writeln!(out)?;
            }
            Ok(())
        }
    }
}

/// One agent of the text listing.
fn write_agent(
    out: &mut impl Write,
    agent: &BlueprintSummary,
    width: usize,
) -> std::io::Result<()> {
    let kind = serde_json::to_value(agent.kind)
        .ok()
        .and_then(|kind| kind.as_str().map(str::to_owned))
        .unwrap_or_default();
    let description = agent.description.lines().next().unwrap_or_default();
    writeln!(out, "{:width$}  {kind:13}  {description}", agent.name)?;
    let parameters = match &agent.parameters_schema {
        Some(schema) => parameters(schema),
        // An AI agent takes a prompt (the implicit schema of `POST /runs`).
        None => "prompt (string, required)".to_owned(),
    };
    writeln!(out, "{:width$}  parameters: {parameters}", "")
}

/// `name (type, required), …` of a parameters schema's properties, in the schema's
/// order; `none` when it has none.
fn parameters(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "none".to_owned();
    };
    if properties.is_empty() {
        return "none".to_owned();
    }
    properties
        .iter()
        .map(|(name, property)| {
            let kind = match property.get("type") {
                Some(Value::String(kind)) => kind.clone(),
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            if required.contains(&name.as_str()) {
                format!("{name} ({kind}, required)")
            } else {
                format!("{name} ({kind})")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_name_their_type_and_whether_they_are_required() {
        let schema = json!({
            "type": "object",
            "required": ["file"],
            "properties": {"file": {"type": "string"}, "lines": {"type": ["integer", "null"]}, "any": {}}
        });
        let shown = parameters(&schema);
        for each in [
            "any (any)",
            "file (string, required)",
            "lines (integer|null)",
        ] {
            assert!(shown.contains(each), "{shown}");
        }
        assert_eq!(shown.matches("), ").count(), 2, "{shown}");
        assert_eq!(parameters(&json!({"type": "object"})), "none");
    }
}
