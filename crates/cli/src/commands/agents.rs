//! `oxydra agents list`: the `[[agents]]` blueprints as the coordinator serves them
//! (`GET /agents`): name, type, description and, for deterministic agents, the
//! parameters schema.

use std::io::Write;

use oxydra::coordinator::AgentListing;

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
    let mut text = Vec::new();
    write_listing(&mut text, &listing, options.output).map_err(CliError::stdout)?;
    // Descriptions of MCP tools come from their servers: hidden characters are JSON
    // escapes (the same JSON), on a terminal or not.
    let text = crate::terminal_text::escape_json(&String::from_utf8_lossy(&text)).into_owned();
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}

/// `text`: the `GET /agents` document, pretty-printed; `jsonl`: one agent per line.
fn write_listing(
    out: &mut impl Write,
    listing: &AgentListing,
    format: OutputFormat,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Text => {
            serde_json::to_writer_pretty(&mut *out, listing)?;
            writeln!(out)
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
