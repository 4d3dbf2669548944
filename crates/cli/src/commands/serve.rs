//! `oxydra serve [--addr 127.0.0.1:8080]`: the coordinator HTTP API until Ctrl-C or
//! SIGTERM, after which in-flight requests finish and running runs end `failed` /
//! `interrupted`.
//!
//! Consent requests are answered by `approve`: `never` (the default) denies, `always`
//! grants, and `ask` suspends the run (`waiting_approval`) until a person decides
//! through `POST /runs/{id}/approvals/{approval_id}` (`oxydra approvals approve`) or
//! `[serve] approval_ttl_secs` passes; each request is said on stderr as it appears,
//! with the command that decides it ([`super::serve_notices`]). The trusted configuration's `[[hooks]]` run around every run.
//!
//! On a loopback address the web console is served at `/` (unless `--no-console`);
//! with a token, the line announcing it holds a login URL with a one-time code
//! (`http://127.0.0.1:PORT/#login=CODE`, one use within 10 minutes), printed there
//! only and never logged.
//!
//! Without a bearer token the API is served on loopback addresses only: a
//! non-loopback address needs a token or an explicit `--insecure-no-auth`
//! (`[serve] allow_unauthenticated = true`).
//!
//! At start the soft file limit is raised to the hard one, and the connection cap
//! (`[serve] max_connections`) is lowered to fit what the limit leaves besides a
//! reserve for the database, logs, MCP servers and commands; the cap in force is said
//! on stderr (docs/coordinator.md, "Bounds").

use std::net::SocketAddr;

use oxydra::coordinator::{ConnectionLimits, FdBudget, FdLimitRaise, shutdown_signal};
use tokio::net::TcpListener;

use crate::args::ServeArgs;
use crate::config::ServiceConfig;
use crate::error::CliError;
use crate::exit_code::Exit;

use crate::setup::service;

/// The address to listen on: an IP address with its port, or a host name (`localhost:0`)
/// resolved to its first address.
async fn resolve(addr: &str, origin: &str) -> Result<SocketAddr, CliError> {
    let invalid = || CliError::Flag {
        flag: if origin == "serve.addr" {
            "serve.addr"
        } else {
            "--addr"
        },
        message: format!("expected an address like 127.0.0.1:8080 or localhost:0, found `{addr}`"),
    };
    if let Ok(socket) = addr.parse::<SocketAddr>() {
        return Ok(socket);
    }
    // Only `host:port` is looked up: anything else is no address at all (the
    // coordinator's own check of `[serve] addr`, applied to `--addr` too).
    if !oxydra::coordinator::is_listen_address(addr) {
        return Err(invalid());
    }
    let mut found = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| CliError::Bind {
            addr: addr.to_owned(),
            origin: origin.to_owned(),
            source,
        })?;
    found.next().ok_or_else(invalid)
}

/// A bound listener and the bearer token that guards it.
pub struct Bound {
    /// The listener.
    pub listener: TcpListener,
    /// The bearer token every request must carry, if any.
    pub auth_token: Option<String>,
    /// The address as given.
    pub addr: String,
    /// Whether it is a loopback address.
    pub loopback: bool,
}

/// Binds the address of `--addr` (`addr`), `[serve] addr` or the default, refusing a
/// non-loopback one without a bearer token unless `--insecure-no-auth` /
/// `[serve] allow_unauthenticated` says to serve it open.
pub async fn bind(
    addr: Option<&str>,
    args: &ServeArgs,
    settings: &ServiceConfig,
) -> Result<Bound, CliError> {
    let (addr, origin) = match addr {
        Some(addr) => (addr.to_owned(), "--addr"),
        None => (settings.serve.addr.clone(), "serve.addr"),
    };
    let socket = resolve(&addr, origin).await?;
    let auth_token = crate::config::auth_token(settings)?;
    let open_allowed = args.insecure_no_auth || settings.serve.allow_unauthenticated;
    if auth_token.is_none() && !socket.ip().is_loopback() {
        if !open_allowed {
            return Err(CliError::Unauthenticated {
                addr,
                origin: origin.to_owned(),
            });
        }
        tracing::warn!(%addr, "serving a non-loopback address without authentication");
    }
    let listener = TcpListener::bind(socket)
        .await
        .map_err(|source| CliError::Bind {
            addr: addr.clone(),
            origin: origin.to_owned(),
            source,
        })?;
    Ok(Bound {
        listener,
        auth_token,
        addr,
        loopback: socket.ip().is_loopback(),
    })
}

/// What stderr says of the connection cap: `at most 108 connections at once (file
/// limit 256, raised from 128; 148 descriptors kept for …)`.
fn cap_line(budget: &FdBudget, raise: Option<&FdLimitRaise>) -> String {
    let limit = match budget.fd_limit {
        Some(limit) => format!("file limit {limit}"),
        None => "no file limit".to_owned(),
    };
    let raised = match raise {
        Some(FdLimitRaise {
            before: Some(before),
            after,
        }) if after.is_none_or(|after| after > *before) => format!(", raised from {before}"),
        _ => String::new(),
    };
    let lowered = if budget.lowered() {
        format!(", lowered from max_connections = {}", budget.configured)
    } else {
        String::new()
    };
    format!(
        "at most {} connections at once{lowered} ({limit}{raised}; {} descriptors kept for \
         the database, logs, MCP servers and commands)",
        budget.cap, budget.kept
    )
}

/// Runs `oxydra serve`.
pub async fn run(args: ServeArgs) -> Result<Exit, CliError> {
    // Before anything opens a file: every descriptor the limit allows is one more
    // connection the cap can fit.
    let raise = match oxydra::coordinator::raise_fd_limit() {
        Ok(raise) => Some(raise),
        Err(error) => {
            tracing::warn!(%error, "cannot raise the file limit");
            None
        }
    };
    let mut settings = service::settings(&args.run_options())?;
    let Bound {
        listener,
        auth_token,
        addr,
        loopback,
    } = bind(args.addr.as_deref(), &args, &settings).await?;
    // The console is for the person at this machine: loopback only, unless refused.
    settings.serve.console = loopback && !args.no_console;
    // The scrubber's built-in patterns, built beside the stores' open instead of by the
    // first run's first scrub (docs/performance.md, "The first scrub"); not waited for.
    drop(tokio::task::spawn_blocking(oxydra::scrubbing::warm_up));
    let service = service::start(&settings, service::Purpose::Serve, auth_token).await?;
    let local = listener
        .local_addr()
        .map_or(addr, |local| local.to_string());
    let agents = service.coordinator.blueprints().len();
    let auth = match (service.coordinator.config().auth_token.is_some(), loopback) {
        (true, _) => "bearer token required",
        (false, true) => "no auth, loopback only",
        (false, false) => "NO AUTH, open to the network (--insecure-no-auth)",
    };
    eprintln!(
        "oxydra serve: listening on http://{local} ({agents} agents, {auth}, database {})",
        settings.memory.db
    );
    if settings.serve.console {
        // With a token, the URL holds a one-time login code (10 minutes, one use):
        // printed here only, never logged.
        match service.coordinator.console_login_code() {
            Some(code) => eprintln!(
                "oxydra serve: web console at http://{local}/#login={code} (this link logs in \
                 once, within 10 minutes; then the page asks for the token; --no-console \
                 turns it off)"
            ),
            None => eprintln!(
                "oxydra serve: web console at http://{local}/ (--no-console turns it off)"
            ),
        }
    }
    let budget = ConnectionLimits::from_config(service.coordinator.config()).budget();
    eprintln!("oxydra serve: {}", cap_line(&budget, raise.as_ref()));
    let notices = tokio_util::sync::CancellationToken::new();
    if service::approvals_wait(&settings) {
        eprintln!(
            "oxydra serve: runs wait up to {} s for consent (approve = \"ask\"): list them \
             with oxydra approvals list --server http://{local}",
            settings.serve.approval_ttl().as_secs()
        );
        super::serve_notices::spawn(
            service.coordinator.clone(),
            format!("http://{local}"),
            notices.clone(),
        );
    }
    let served = service
        .coordinator
        .serve(listener, shutdown_signal())
        .await
        .map_err(|error| CliError::Coordinator(error.to_string()));
    notices.cancel();
    service.stop().await;
    served?;
    eprintln!("oxydra serve: stopped");
    Ok(Exit::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_line_says_the_limit_what_it_was_raised_from_and_the_cap() {
        let budget = FdBudget::fit(256, Some(256), 20, 128);
        let raise = FdLimitRaise {
            before: Some(128),
            after: Some(256),
        };
        assert_eq!(
            cap_line(&budget, Some(&raise)),
            "at most 108 connections at once, lowered from max_connections = 256 (file limit \
             256, raised from 128; 148 descriptors kept for the database, logs, MCP servers \
             and commands)"
        );
        let roomy = FdBudget::fit(256, Some(4096), 20, 128);
        let kept = FdLimitRaise {
            before: Some(4096),
            after: Some(4096),
        };
        assert_eq!(
            cap_line(&roomy, Some(&kept)),
            "at most 256 connections at once (file limit 4096; 148 descriptors kept for the \
             database, logs, MCP servers and commands)"
        );
        assert!(cap_line(&FdBudget::fit(256, None, 20, 128), None).contains("no file limit"));
    }
}
