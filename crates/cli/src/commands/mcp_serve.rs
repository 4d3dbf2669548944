//! `oxydra mcp serve`: the coordinator as an MCP server on stdin/stdout, built from the
//! configuration (and its trust) exactly as `oxydra serve` builds it. It serves until
//! the client closes stdin, or Ctrl-C / SIGTERM; then active runs end `failed` /
//! `interrupted` as with `oxydra serve`, and every run stays readable in the database.
//!
//! Stdout carries only JSON-RPC messages; everything else goes to stderr.

use std::path::Path;

use oxydra::coordinator::shutdown_signal;
use rmcp::ServiceExt;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::transport::stdio_pipes;

use crate::args::{McpServeArgs, McpTransport};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::mcp_server::McpServer;

use crate::setup::service;

/// Room for the JSON-RPC envelope around arguments of the largest accepted size.
const ENVELOPE_BYTES: usize = 64 * 1024;

/// Runs `oxydra mcp serve`.
pub async fn run(args: McpServeArgs) -> Result<Exit, CliError> {
    match args.transport {
        McpTransport::Stdio => stdio(args).await,
    }
}

async fn stdio(args: McpServeArgs) -> Result<Exit, CliError> {
    let only_http = |flag: &'static str| CliError::Flag {
        flag,
        message: "applies to `oxydra serve`; `oxydra mcp serve` speaks MCP on stdin/stdout"
            .to_owned(),
    };
    if args.serve.addr.is_some() {
        return Err(only_http("--addr"));
    }
    if args.serve.insecure_no_auth {
        return Err(only_http("--insecure-no-auth"));
    }
    let settings = service::settings(&args.serve.run_options())?;
    // The client started this process: it is the user, with the user's trust, and no
    // network listener exists for a token to guard.
    let service = service::start(&settings, service::Purpose::Serve, None).await?;
    let served = serve_stdio(&service, &settings.runtime.workspace, &settings.memory.db).await;
    service.stop().await;
    served?;
    Ok(Exit::Done)
}

async fn serve_stdio(
    service: &service::Service,
    workspace: &Path,
    db: &crate::config::Database,
) -> Result<(), CliError> {
    let server = McpServer::new(&service.coordinator, workspace.to_path_buf())?;
    // Lines up to rmcp's cap reach the handler, which answers arguments over the body
    // limit with a JSON-RPC error; a longer line is dropped unread (memory stays bounded).
    let max_line = service
        .coordinator
        .config()
        .body_limit_bytes
        .saturating_add(ENVELOPE_BYTES)
        .max(DEFAULT_MAX_LINE_LENGTH);
    let (read, write) = stdio_pipes();
    let transport = AsyncRwTransport::new_server(read, write).with_max_line_length(max_line);
    eprintln!(
        "oxydra mcp serve: serving {} agents on stdio (database {})",
        service.coordinator.blueprints().len(),
        db,
    );
    let running = server
        .serve(transport)
        .await
        .map_err(|error| CliError::Mcp(format!("MCP session did not start: {error}")))?;
    let stop = running.cancellation_token();
    tokio::select! {
        quit = running.waiting() => {
            quit.map_err(|error| CliError::Mcp(format!("MCP session failed: {error}")))?;
        }
        () = shutdown_signal() => stop.cancel(),
    }
    eprintln!("oxydra mcp serve: stopped");
    Ok(())
}
