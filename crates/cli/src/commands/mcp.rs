//! `oxydra mcp list`: starts each `[[mcp_servers]]` entry, shows its state and the
//! tools it gives agents (as `<server>__<tool>`, with their safety tiers), then
//! stops it.
//!
//! Names, descriptions and failure reasons (which quote a server's stderr) come from
//! the servers, and a server's command line, URL and environment can carry its keys:
//! every field is scrubbed, a server's transport is shown as `--print-config` shows
//! it (secrets in arguments and the URL masked), and the listing goes through the
//! terminal sanitizer (text) or has every hidden character JSON-escaped (JSON lines),
//! on a terminal or not.

use std::io::Write;

use oxydra::mcp::{McpManager, McpServerConfig, ServerState, ServerStatus};
use oxydra::scrubbing::scrub;

use crate::args::{ListOptions, McpAction, McpArgs, OutputFormat};
use crate::config;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::shown;

/// Runs `oxydra mcp …`.
pub async fn run(args: McpArgs) -> Result<Exit, CliError> {
    match args.action {
        McpAction::List(options) => list(&options).await,
        McpAction::Serve(args) => super::mcp_serve::run(args).await,
    }
}

async fn list(options: &ListOptions) -> Result<Exit, CliError> {
    let file = config::load(options.config.as_deref())?;
    let servers = file.config.mcp_servers.clone();
    if servers.is_empty() {
        let source = file.path.map_or_else(
            || "no configuration file".to_owned(),
            |p| p.display().to_string(),
        );
        eprintln!("no MCP servers configured ({source}); add [[mcp_servers]] entries");
        return Ok(Exit::Done);
    }
    let env = |name: &str| std::env::var(name).ok();
    let handles = config::file_secret_handles(&file, &env)?;
    let ready = crate::setup::launch::mcp_servers(&servers, file.path.as_deref(), &handles)?;
    let manager = McpManager::start(ready)
        .await
        .map_err(|error| CliError::Mcp(scrub(&error.to_string()).text.into_owned()))?;
    let status: Vec<ServerStatus> = manager
        .status()
        .into_iter()
        .map(|status| {
            let config = servers.iter().find(|server| server.name == status.name);
            scrubbed(status, config)
        })
        .collect();
    manager.shutdown().await;
    let mut listing = Vec::new();
    write_status(&mut listing, &status, options.output).map_err(CliError::stdout)?;
    let listing = match options.output {
        // A secret split over fields (a flag in the transport, its value in a reason)
        // is seen on the whole line.
        OutputFormat::Text => scrub(&String::from_utf8_lossy(&listing))
            .text
            .into_owned()
            .into_bytes(),
        OutputFormat::Jsonl => listing,
    };
    // A server can print the value a handle put in its environment (in a failure
    // reason): every handle's value is redacted by value too.
    let listing = if handles.is_empty() {
        listing
    } else {
        let scrubber = oxydra::scrubbing::Scrubber::default()
            .with_known_secrets(handles.values())
            .map_err(|error| CliError::Mcp(format!("[secrets]: {error}")))?;
        scrubber
            .scrub(&String::from_utf8_lossy(&listing))
            .text
            .into_owned()
            .into_bytes()
    };
    let mut out = std::io::stdout().lock();
    out.write_all(shown(options.output, &listing).as_bytes())
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

/// `status` with its transport described from the masked `config` (see
/// [`config::masked_mcp_server`]) and every text scrubbed.
fn scrubbed(mut status: ServerStatus, config: Option<&McpServerConfig>) -> ServerStatus {
    let transport = config.map_or_else(
        || status.transport.clone(),
        |config| config::masked_mcp_server(config).describe_transport(),
    );
    status.transport = scrub(&transport).text.into_owned();
    status.name = scrub(&status.name).text.into_owned();
    if let ServerState::Failed { reason } = &mut status.state {
        *reason = scrub(reason).text.into_owned();
    }
    for tool in &mut status.tools {
        tool.description = scrub(&tool.description).text.into_owned();
    }
    status
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
