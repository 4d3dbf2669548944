//! `oxydra mcp serve`: the coordinator as an MCP server, built from the configuration
//! (and its trust) exactly as `oxydra serve` builds it.
//!
//! - On stdin/stdout (the default) it serves until the client closes stdin, or Ctrl-C /
//!   SIGTERM. Stdout carries only JSON-RPC messages; everything else goes to stderr.
//! - With `--listen ADDR` (`--transport http`) it serves MCP's streamable HTTP at
//!   `http://ADDR/mcp` until Ctrl-C / SIGTERM, bound and guarded as `oxydra serve` is:
//!   a non-loopback address needs the bearer token (`OXYDRA_SERVE_TOKEN` or the variable
//!   `[serve] auth_token_env` names).
//!
//! Then active runs end `failed` / `interrupted` as with `oxydra serve`, and every run
//! stays readable in the database.

use oxydra::coordinator::shutdown_signal;
use rmcp::ServiceExt;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::transport::stdio_pipes;

use crate::args::{McpServeArgs, McpTransport};
use crate::config::ServiceConfig;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::mcp_server::McpServer;
use crate::mcp_server::builtin_tools::{self, BuiltinTools};
use crate::mcp_server::http::{self, MCP_PATH};

use crate::setup::service;

use super::serve;

/// Room for the JSON-RPC envelope around arguments of the largest accepted size.
const ENVELOPE_BYTES: usize = 64 * 1024;

/// Runs `oxydra mcp serve`.
pub async fn run(args: McpServeArgs) -> Result<Exit, CliError> {
    match (args.transport, &args.listen) {
        (McpTransport::Stdio, None) => stdio(args).await,
        _ => streamable_http(args).await,
    }
}

/// The `--tools` names, checked before anything starts.
fn tool_names(args: &McpServeArgs) -> Result<Option<Vec<String>>, CliError> {
    args.tools
        .as_deref()
        .map(builtin_tools::parse_names)
        .transpose()
}

/// The server of the coordinator's tools and the `--tools` ones.
fn server(
    service: &service::Service,
    settings: &ServiceConfig,
    tools: Option<&[String]>,
) -> Result<McpServer, CliError> {
    let server = McpServer::new(
        &service.coordinator,
        settings.runtime.workspace.clone(),
        service::approvals_wait(settings),
    )?;
    Ok(match tools {
        Some(names) => server.with_builtins(BuiltinTools::new(names, settings)?),
        None => server,
    })
}

async fn streamable_http(args: McpServeArgs) -> Result<Exit, CliError> {
    let tools = tool_names(&args)?;
    let settings = service::settings(&args.serve.run_options())?;
    let addr = args.listen.as_deref().or(args.serve.addr.as_deref());
    let bound = serve::bind(addr, &args.serve, &settings).await?;
    let service = service::start(&settings, service::Purpose::Serve, bound.auth_token).await?;
    let served = match server(&service, &settings, tools.as_deref()) {
        Ok(server) => serve_http(&service, server, bound.listener, &settings, bound.loopback).await,
        Err(error) => Err(error),
    };
    service.stop().await;
    served?;
    eprintln!("oxydra mcp serve: stopped");
    Ok(Exit::Done)
}

async fn serve_http(
    service: &service::Service,
    server: McpServer,
    listener: tokio::net::TcpListener,
    settings: &ServiceConfig,
    loopback: bool,
) -> Result<(), CliError> {
    let coordinator = &service.coordinator;
    let local = listener
        .local_addr()
        .map_err(|error| CliError::Coordinator(format!("no local address: {error}")))?;
    let auth = match (coordinator.config().auth_token.is_some(), loopback) {
        (true, _) => "bearer token required",
        (false, true) => "no auth, loopback only",
        (false, false) => "NO AUTH, open to the network (--insecure-no-auth)",
    };
    eprintln!(
        "oxydra mcp serve: listening on http://{local}{MCP_PATH} ({} agents, {auth}, database {})",
        coordinator.blueprints().len(),
        settings.memory.db,
    );
    let body_limit = coordinator
        .config()
        .body_limit_bytes
        .saturating_add(ENVELOPE_BYTES);
    http::serve(coordinator, server, listener, body_limit, shutdown_signal()).await
}

async fn stdio(args: McpServeArgs) -> Result<Exit, CliError> {
    let only_http = |flag: &'static str| CliError::Flag {
        flag,
        message: "applies to a network listener: serve MCP over HTTP with `--listen ADDR` \
                  (or `--transport http`); without it `oxydra mcp serve` speaks MCP on \
                  stdin/stdout"
            .to_owned(),
    };
    if args.serve.addr.is_some() {
        return Err(only_http("--addr"));
    }
    if args.serve.insecure_no_auth {
        return Err(only_http("--insecure-no-auth"));
    }
    let tools = tool_names(&args)?;
    let settings = service::settings(&args.serve.run_options())?;
    // The client started this process: it is the user, with the user's trust, and no
    // network listener exists for a token to guard.
    let service = service::start(&settings, service::Purpose::Serve, None).await?;
    let served = match server(&service, &settings, tools.as_deref()) {
        Ok(server) => serve_stdio(&service, server, &settings.memory.db).await,
        Err(error) => Err(error),
    };
    service.stop().await;
    served?;
    Ok(Exit::Done)
}

async fn serve_stdio(
    service: &service::Service,
    server: McpServer,
    db: &crate::config::Database,
) -> Result<(), CliError> {
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
