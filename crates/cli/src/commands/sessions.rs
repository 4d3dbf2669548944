//! `oxydra sessions list | show <ID> | delete <ID>`: what the memory database holds
//! (`rewind`, `fork` and `diff` are in [`super::checkpoints`]).

use std::path::PathBuf;

use crate::args::{ListOptions, OutputFormat, SessionsAction, SessionsArgs, SessionsListArgs};
use crate::config;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::{to_stdout, write_messages, write_meta, write_sessions};
use crate::setup::database::{listing_in, memory_error, open_for_listing};
use crate::setup::session_id::stored_session;

/// Runs `oxydra sessions …`.
pub async fn run(args: SessionsArgs) -> Result<Exit, CliError> {
    match args.action {
        SessionsAction::List(args) => list(&args).await,
        SessionsAction::Show { id, options } => show(&id, &options).await,
        SessionsAction::Delete { id, options } => delete(&id, &options.list_options()).await,
        SessionsAction::Rewind {
            id,
            to,
            force,
            options,
        } => super::checkpoints::rewind(&id, to, force, &options.list_options()).await,
        SessionsAction::Fork { id, at, options } => {
            super::checkpoints::fork(&id, at, &options.list_options()).await
        }
        SessionsAction::Diff { id, turn, options } => {
            super::checkpoints::diff(&id, turn, &options.list_options()).await
        }
    }
}

/// `sessions list`: the sessions of this workspace (`-C DIR`: that one), or with
/// `--all` of every workspace; in text, a line on stderr says how many others there are.
async fn list(args: &SessionsListArgs) -> Result<Exit, CliError> {
    let options = &args.options;
    let workspace = match (args.all, &args.workspace) {
        (true, _) => None,
        (false, dir) => {
            let dir = dir.clone().unwrap_or_else(|| PathBuf::from("."));
            Some(dir.canonicalize().map_err(|source| CliError::Flag {
                flag: "--workspace",
                message: format!("{}: {source}", dir.display()),
            })?)
        }
    };
    let (db, origin) = config::resolve_database(options)?;
    let (sessions, elsewhere) = match open_for_listing(&db, &origin).await? {
        Some(memory) => listing_in(memory.as_ref(), &db, args.limit, workspace.as_deref()).await?,
        None => (Vec::new(), 0),
    };
    if elsewhere > 0 && options.output == OutputFormat::Text {
        let plural = if elsewhere == 1 { "" } else { "s" };
        eprintln!("({elsewhere} session{plural} of other workspaces not shown: --all lists them)");
    }
    to_stdout(options.output, |out| {
        write_sessions(out, &sessions, options.output)
    })?;
    Ok(Exit::Done)
}

async fn delete(id: &str, options: &ListOptions) -> Result<Exit, CliError> {
    let (db, origin) = config::resolve_database(options)?;
    let not_found = || CliError::SessionNotFound {
        id: id.to_owned(),
        db: db.shown_path(),
    };
    let memory = open_for_listing(&db, &origin)
        .await?
        .ok_or_else(not_found)?;
    let session = stored_session(memory.as_ref(), &db, id).await?;
    memory
        .delete_session(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    eprintln!("deleted session {}", session.as_str());
    Ok(Exit::Done)
}

async fn show(id: &str, options: &ListOptions) -> Result<Exit, CliError> {
    let (db, origin) = config::resolve_database(options)?;
    let not_found = || CliError::SessionNotFound {
        id: id.to_owned(),
        db: db.shown_path(),
    };
    let memory = open_for_listing(&db, &origin)
        .await?
        .ok_or_else(not_found)?;
    let session = stored_session(memory.as_ref(), &db, id).await?;
    let messages = memory
        .messages(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    let meta = memory
        .session_meta(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    to_stdout(options.output, |out| {
        if options.output == OutputFormat::Text {
            write_meta(out, meta.as_ref())?;
        }
        write_messages(out, &messages, options.output)?;
        if options.output == OutputFormat::Text {
            crate::output::plan_view::write_latest(out, &messages)?;
        }
        Ok(())
    })?;
    Ok(Exit::Done)
}
