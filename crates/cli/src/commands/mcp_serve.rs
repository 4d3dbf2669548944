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

use std::sync::Arc;

use oxydra::coordinator::shutdown_signal;
use oxydra::executor::AlwaysApprove;
use oxydra::mcp_server::{BuiltinTools, MCP_PATH, McpServer, McpServerError};
use oxydra::tools::{BUILTIN_TOOL_NAMES, ToolRegistry};

use crate::args::{McpServeArgs, McpTransport};
use crate::config::{ApproveMode, ServiceConfig};
use crate::error::CliError;
use crate::exit_code::Exit;

use crate::setup::service;

use super::serve;

/// Runs `oxydra mcp serve`.
pub async fn run(args: McpServeArgs) -> Result<Exit, CliError> {
    match (args.transport, &args.listen) {
        (McpTransport::Stdio, None) => stdio(args).await,
        _ => streamable_http(args).await,
    }
}

/// The `--tools` names, checked before anything starts: every name a built-in tool,
/// none twice.
fn tool_names(args: &McpServeArgs) -> Result<Option<Vec<String>>, CliError> {
    args.tools.as_deref().map(parse_names).transpose()
}

/// The `--tools` list, checked: every name a built-in tool, none twice.
fn parse_names(list: &str) -> Result<Vec<String>, CliError> {
    let flag = |message: String| CliError::Flag {
        flag: "--tools",
        message,
    };
    let mut names: Vec<String> = Vec::new();
    for name in list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        if !BUILTIN_TOOL_NAMES.contains(&name) {
            return Err(flag(format!(
                "`{name}` is no built-in tool; the built-in tools are {}",
                BUILTIN_TOOL_NAMES.join(", ")
            )));
        }
        if names.iter().any(|seen| seen == name) {
            return Err(flag(format!("`{name}` is named twice")));
        }
        names.push(name.to_owned());
    }
    if names.is_empty() {
        return Err(flag(format!(
            "name at least one built-in tool ({})",
            BUILTIN_TOOL_NAMES.join(", ")
        )));
    }
    Ok(names)
}

/// The CLI's error for the server's: a refused `--tools` list is the flag's fault.
fn cli_error(error: McpServerError) -> CliError {
    match error {
        McpServerError::BuiltinTools(error) => CliError::Flag {
            flag: "--tools",
            message: error.to_string(),
        },
        McpServerError::SessionStart(_) | McpServerError::Session(_) => {
            CliError::Mcp(error.to_string())
        }
        McpServerError::InvalidTool { .. }
        | McpServerError::CoordinatorGone
        | McpServerError::Http(_) => CliError::Coordinator(error.to_string()),
    }
}

/// The built-in tools `names` as the configuration's `[tools]`, `[[rules]]` and
/// `approve` set them up for `oxydra run`.
fn builtin_tools(names: &[String], settings: &ServiceConfig) -> Result<BuiltinTools, CliError> {
    let registry = ToolRegistry::with_builtin_subset(&settings.tools, names)
        .map_err(|error| cli_error(error.into()))?;
    let tools =
        BuiltinTools::new(registry, settings.workspace.clone()).with_rules(settings.rules.clone());
    Ok(match settings.approve() {
        ApproveMode::Allow => tools.with_permission_broker(Arc::new(AlwaysApprove)),
        ApproveMode::Ask | ApproveMode::Deny => tools,
    })
}

/// The server of the coordinator's tools and the `--tools` ones.
fn server(
    service: &service::Service,
    settings: &ServiceConfig,
    tools: Option<&[String]>,
    model_approvals: bool,
) -> Result<McpServer, CliError> {
    let mut builder = McpServer::builder(&service.coordinator)
        .workspace(settings.workspace.clone())
        .approvals(service::approvals_wait(settings))
        .model_approvals(model_approvals);
    if let Some(names) = tools {
        builder = builder.builtin_tools(builtin_tools(names, settings)?);
    }
    builder.build().map_err(cli_error)
}

async fn streamable_http(args: McpServeArgs) -> Result<Exit, CliError> {
    let tools = tool_names(&args)?;
    let settings = service::settings(&args.serve.run_options())?;
    let addr = args.listen.as_deref().or(args.serve.addr.as_deref());
    let bound = serve::bind(addr, &args.serve, &settings).await?;
    let service = service::start(&settings, service::Purpose::Serve, bound.auth_token).await?;
    let served = match server(
        &service,
        &settings,
        tools.as_deref(),
        args.allow_model_approvals,
    ) {
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
    server
        .serve_http(listener, shutdown_signal())
        .await
        .map_err(cli_error)
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
    let served = match server(
        &service,
        &settings,
        tools.as_deref(),
        args.allow_model_approvals,
    ) {
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
    eprintln!(
        "oxydra mcp serve: serving {} agents on stdio (database {})",
        service.coordinator.blueprints().len(),
        db,
    );
    server
        .serve_stdio(shutdown_signal())
        .await
        .map_err(cli_error)?;
    eprintln!("oxydra mcp serve: stopped");
    Ok(())
}
