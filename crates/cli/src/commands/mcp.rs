//! `oxydra mcp list`: starts each `[[mcp_servers]]` entry, shows its state and the
//! tools it gives agents (as `<server>__<tool>`, with their safety tiers), then
//! stops it.
//!
//! Names, descriptions and failure reasons (which quote a server's stderr) come from
//! the servers: on a terminal the listing goes through the terminal sanitizer.

use std::io::Write;

use oxydra::mcp::{McpManager, ServerState, ServerStatus};

use crate::args::{ListOptions, McpAction, McpArgs, OutputFormat};
use crate::config;
use crate::error::CliError;
use crate::exit_code::Exit;

/// Runs `oxydra mcp …`.
pub async fn run(args: McpArgs) -> Result<Exit, CliError> {
    match args.action {
        McpAction::List(options) => list(&options).await,
        McpAction::Serve(args) => super::mcp_serve::run(args).await,
    }
}

async fn list(options: &ListOptions) -> Result<Exit, CliError> {
    let file = config::load(options.config.as_deref())?;
    let servers = file.config.mcp_servers;
    if servers.is_empty() {
        let source = file.path.map_or_else(
            || "no configuration file".to_owned(),
            |p| p.display().to_string(),
        );
        eprintln!("no MCP servers configured ({source}); add [[mcp_servers]] entries");
        return Ok(Exit::Done);
    }
    let manager = McpManager::start(servers)
        .await
        .map_err(|error| CliError::Mcp(error.to_string()))?;
    let status = manager.status();
    manager.shutdown().await;
    let mut listing = Vec::new();
    write_status(&mut listing, &status, options.output).map_err(CliError::stdout)?;
    let mut out = std::io::stdout().lock();
    if options.output == OutputFormat::Text && std::io::IsTerminal::is_terminal(&out) {
        let shown = crate::terminal_text::lines(&String::from_utf8_lossy(&listing)).into_owned();
        listing = shown.into_bytes();
    }
    out.write_all(&listing)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    // A server that did not start is worth a non-zero exit for scripts.
    if status
        .iter()
        .any(|server| matches!(server.state, ServerState::Failed { .. }))
    {
        Ok(Exit::Runtime)
    } else {
        Ok(Exit::Done)
    }
}

fn write_status(
    out: &mut impl Write,
    status: &[ServerStatus],
    format: OutputFormat,
) -> std::io::Result<()> {
    for server in status {
        match format {
            OutputFormat::Text => write!(out, "{server}")?,
            OutputFormat::Jsonl => {
                serde_json::to_writer(&mut *out, server)?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}
