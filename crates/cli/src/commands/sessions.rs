//! `oxydra sessions list | show <ID> | delete <ID>`: what the memory database holds.

use std::sync::Arc;

use oxydra::types::SessionId;

use crate::args::{ListOptions, OutputFormat, SessionsAction, SessionsArgs};
use crate::config::{self, Database};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::output::listing::{to_stdout, write_messages, write_meta, write_sessions};
use crate::setup::database::{MemoryStore, listing, memory_error, open_existing};

/// Runs `oxydra sessions …`.
pub async fn run(args: SessionsArgs) -> Result<Exit, CliError> {
    match args.action {
        SessionsAction::List(args) => list(&args.options, args.limit).await,
        SessionsAction::Show { id, options } => show(&id, &options).await,
        SessionsAction::Delete { id, options } => delete(&id, &options.list_options()).await,
    }
}

/// Opens the database the listing commands read. A database named on purpose (`--db`,
/// `OXYDRA_DB`, `[memory] db`) that does not exist is an error (a mistyped path would
/// otherwise look like an empty store); the default one not existing yet is `None`.
async fn open_for_listing(
    db: &Database,
    origin: &str,
) -> Result<Option<Arc<dyn MemoryStore>>, CliError> {
    if let Some(path) = db.sqlite_path()
        && !path.exists()
        && config::default_db_path().as_deref() != Some(path)
    {
        return Err(CliError::DatabaseMissing {
            path: path.to_path_buf(),
        });
    }
    open_existing(db, origin).await
}

async fn list(options: &ListOptions, limit: Option<usize>) -> Result<Exit, CliError> {
    let (db, origin) = config::resolve_database(options)?;
    let sessions = match open_for_listing(&db, &origin).await? {
        Some(memory) => listing(memory.as_ref(), &db, limit).await?,
        None => Vec::new(),
    };
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
    let session = SessionId::from(id);
    let exists = memory
        .session_exists(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    if !exists {
        return Err(not_found());
    }
    memory
        .delete_session(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    eprintln!("deleted session {id}");
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
    let session = SessionId::from(id);
    let exists = memory
        .session_exists(&session)
        .await
        .map_err(|error| memory_error(&db, error))?;
    if !exists {
        return Err(not_found());
    }
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
